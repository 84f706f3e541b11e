"""Atomic file output: write to a temporary file beside the target, then rename.

The new file gets the mode a plain ``open(path, "w")`` would give it: the replaced
file's mode, or ``0o666`` less the process umask for a new file (``mkstemp`` alone
would leave every output ``0o600``).
"""

import errno
import os
import stat
import tempfile
from pathlib import Path


def _mode_for(target: Path) -> int:
    """The permission bits the written file should carry."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` so that readers see either the old or the whole new file."""
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see either the old or the whole new file.

    A directory at ``path``, or a file where one of its folders should be, is an
    ``OSError`` naming that path (not the temporary file) before anything is written.
    """
    target = Path(path)
    if target.is_dir():  # os.replace would fail naming the temporary file, not the target
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file", str(target))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):  # a file where a folder should be
        files = [p for p in reversed(target.parents) if p.exists() and not p.is_dir()]
        if not files:  # gone since: report the original error
            raise
        message = "is a file, not a directory"
        raise NotADirectoryError(errno.ENOTDIR, message, str(files[0])) from None
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), _mode_for(target))
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_torch_atomic(path: str | os.PathLike, obj: object) -> Path:
    """``torch.save(obj)`` to ``path``, atomically (model files, training state)."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return write_bytes_atomic(path, buffer.getvalue())
