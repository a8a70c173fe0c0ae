"""Opening a file that may not be a file: a FIFO, a device (a symlink to
``/dev/zero`` or ``/dev/urandom``), a directory or a socket where a
transcript or a trace was expected. A read of those may never end, or never
stop growing, so they are not read at all."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class NotRegularFile(OSError):
    """A FIFO, a device, a directory: a read of it may never end, so it is not read at all."""


def open_regular(path: Path | str):
    """``path`` opened for binary reading, or :class:`NotRegularFile`. Opened
    non-blocking, so a FIFO without a writer cannot hang the open itself."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(f"{path}: not a regular file ({file_kind(mode)})")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def file_kind(mode: int) -> str:
    """What a ``st_mode`` that is not a regular file is, in words."""
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a file"
