"""Opening a file a user or a recording names, for reading, only when it is a regular file.

A FIFO, a character device or a socket looks like a file to `open()`, which then waits for a writer forever
(an archive can carry FIFOs). `open_regular` opens without waiting (O_NONBLOCK), checks what it opened, and
refuses anything but a regular file with an OSError whose message says what the path is. Pure: no torch.
"""
from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

#: st_mode kind -> words, for the refusal
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def kind_of(mode: int) -> str:
    """What a file of this st_mode is, in words ("a regular file", "a FIFO (named pipe)", ...)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """`open(path, "rb")` for a regular file (symlinks followed). Never blocks on a FIFO.

    Raises:
        IsADirectoryError: a folder.
        OSError: errno EINVAL for anything else that is not a regular file (its strerror says what it is), or
            the OSError `os.open` raised (FileNotFoundError, PermissionError, ...).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "it is a folder, not a file", str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, f"it is {kind_of(mode)}, not a regular file: refused", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


__all__ = ["kind_of", "open_regular"]
