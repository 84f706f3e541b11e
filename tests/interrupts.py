"""Ctrl-C in tests: a SIGINT sent to this process after a delay, with Python's handler."""

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def ctrl_c_after(seconds: float) -> Iterator[None]:
    """SIGINT to this process ``seconds`` into the block (not after it ends), handled by
    Python's own handler (a library's, such as CP-SAT's, may outlive its solve)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
