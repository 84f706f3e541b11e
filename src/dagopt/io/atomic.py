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
    A symbolic link is written through (its destination is replaced, the link kept), and
    an existing file that is not a regular one (``/dev/null``, a FIFO) is written into
    as ``open(path, "wb")`` would, never renamed over. Returns ``path``.
    """
    target = Path(os.path.realpath(path)) if Path(path).is_symlink() else Path(path)
    if _is_special(target):
        with open(target, "wb") as handle:
            handle.write(data)
        return Path(path)
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
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:  # name the user's path, not the temporary file's
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), _mode_for(target))
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename != tmp:
            raise
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(path)


def _is_special(target: Path) -> bool:
    """Whether ``target`` exists and is neither a regular file nor a directory."""
    try:
        mode = target.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def write_torch_atomic(path: str | os.PathLike, obj: object) -> Path:
    """``torch.save(obj)`` to ``path``, atomically (model files, training state)."""
    import io

    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return write_bytes_atomic(path, buffer.getvalue())
