"""Reading and writing source files without losing anything.

We read bytes and let libcst decode them (coding cookie, BOM), and write back
``Module.bytes`` (same encoding, newlines and BOM). Writes are atomic: a temporary file
in the same directory, fsync, then ``os.replace``; the file's mode is kept. A file that
changed on disk after we read it is never overwritten.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass


class SourceError(Exception):
    """One-line reason a file cannot be read or written."""


@dataclass(frozen=True)
class Snapshot:
    data: bytes
    mtime_ns: int
    size: int


def read(path: str) -> Snapshot:
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise SourceError(f"{path}: is a directory")
        if not stat.S_ISREG(st.st_mode):
            # a FIFO or a device named *.py: opening it would block forever (or never end)
            raise SourceError(f"{path}: not a regular file")
        with open(path, "rb") as fh:
            data = fh.read()
    except SourceError:
        raise
    except FileNotFoundError:
        raise SourceError(f"{path}: no such file (a broken symlink?)") from None
    except PermissionError:
        raise SourceError(f"{path}: permission denied") from None
    except IsADirectoryError:
        raise SourceError(f"{path}: is a directory") from None
    except OSError as e:
        raise SourceError(f"{path}: cannot read: {e.strerror or e}") from None
    return Snapshot(data, st.st_mtime_ns, st.st_size)


def write_atomic(path: str, data: bytes, expected: Snapshot) -> None:
    """Replace ``path`` by ``data`` unless its content changed since ``expected`` was read."""
    real = os.path.realpath(path)  # replace the target of a symlink, not the link
    try:
        with open(real, "rb") as fh:
            current = fh.read()
    except OSError as e:
        raise SourceError(f"{path}: cannot re-read before writing: {e.strerror or e}") from None
    if current != expected.data:
        raise SourceError(f"{path}: changed on disk while being fixed; not written")
    replace_atomically(real, data, mode=stat.S_IMODE(os.stat(real).st_mode))


def replace_atomically(path: str, data: bytes, *, mode: "int | None" = None, fsync: bool = True) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it over ``path``: a reader
    (or a crash) sees the old content or the new, never a mix. Raises OSError."""
    fd, tmp = tempfile.mkstemp(prefix=".shutdown-lint-", suffix=".tmp", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
