"""A capture directory that never follows a link: make it, list it, read a
file from it, remove it, always through a directory descriptor checked to be
the directory perftriage made (same device and inode).

The server being profiled writes into this directory and controls what
appears there: a symlink named like a rank file (to ``/etc/shadow``), a
FIFO, a hard link, or the directory itself replaced by a symlink to another
one. So entries are listed with ``lstat`` (regular files with one link
only), files are opened with ``O_NOFOLLOW | O_NONBLOCK`` relative to the
checked directory descriptor and checked again with ``fstat``, and removal
unlinks entries relative to descriptors (``unlink`` never follows a link;
subdirectories are opened ``O_NOFOLLOW``). Nothing here follows a link
placed by the server.

This file is standard library only and runs in two places: here for the
local host (:class:`~perftriage.transport.files.LocalFiles` calls its
functions), and on a remote host without SFTP, where its text is sent to
``python3 -c`` with one JSON argument and it answers one JSON line
(:class:`~perftriage.transport.files.ExecFiles`). One implementation, the
same checks on both paths.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import secrets
import stat
import sys
from collections.abc import Callable

MAX_ENTRIES = 20000  # a directory listing larger than this is refused
MAX_DEPTH = 8  # subdirectories removed at most this deep
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | _CLOEXEC


class Refused(Exception):
    """The directory or a file in it is not what perftriage may read or remove."""


def kind_of(mode: int, links: int = 1) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISREG(mode) and links != 1:
        return f"a file with {links} hard links"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a regular file"


def make_dir(parent: str, prefix: str) -> dict:
    """A fresh 0700 directory under ``parent``: its path and (device, inode)."""
    path = os.path.join(parent, prefix + secrets.token_hex(6))
    os.mkdir(path, 0o700)
    st = os.lstat(path)
    return {"path": path, "id": [st.st_dev, st.st_ino]}


def open_dir(path: str, ident: list | None, follow: bool = False) -> int:
    """A descriptor of ``path`` checked to be the directory ``ident`` names
    (device, inode); ``follow`` only for a directory the user named (vLLM's).
    FileNotFoundError when it is gone."""
    flags = DIR_FLAGS & ~os.O_NOFOLLOW if follow else DIR_FLAGS
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            try:
                now = kind_of(os.lstat(path).st_mode)
            except OSError:
                now = "something else"
            raise Refused(f"{path} is no longer the directory perftriage made: it is {now} "
                          "now (refused to follow it)") from None
        raise
    st = os.fstat(fd)
    if ident is not None and [st.st_dev, st.st_ino] != list(ident):
        os.close(fd)
        raise Refused(f"{path} was replaced by another directory (device/inode differ from the "
                      "one perftriage made): refused")
    return fd


def list_dir(path: str, ident: list | None, follow: bool = False,
             max_entries: int = MAX_ENTRIES) -> dict | None:
    """``{"files": {name: size}, "other": {name: what it is}, "id": [dev, ino]}``:
    regular files with one link by ``lstat``, everything else named; None
    when the directory does not exist."""
    try:
        fd = open_dir(path, ident, follow)
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        files: dict = {}
        other: dict = {}
        with os.scandir(fd) as entries:
            for n, entry in enumerate(entries):
                if n >= max_entries:
                    raise Refused(f"{path} holds more than {max_entries} entries: refused")
                try:
                    est = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if stat.S_ISREG(est.st_mode) and est.st_nlink == 1:
                    files[entry.name] = est.st_size
                else:
                    other[entry.name] = kind_of(est.st_mode, est.st_nlink)
        return {"files": files, "other": other, "id": [st.st_dev, st.st_ino]}
    finally:
        os.close(fd)


def open_file(dir_fd: int, name: str, size: int) -> int:
    """``name`` in the checked directory, opened without following a link and
    checked: a regular file with one link, still ``size`` bytes long."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(f"{name} is a symbolic link: refused") from None
        if exc.errno == errno.ENOENT:
            raise Refused(f"{name} vanished before it was read") from None
        raise
    try:
        st = os.fstat(fd)
        what = kind_of(st.st_mode, st.st_nlink)
        if what != "a regular file":
            raise Refused(f"{name} is {what}, not a regular file: refused")
        if st.st_size != size:
            raise Refused(f"{name} changed size after it was complete ({size} -> "
                          f"{st.st_size} bytes): refused")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_exact(fd: int, offset: int, length: int) -> bytes:
    """``length`` bytes at ``offset`` (fewer only at the end of the file)."""
    parts = []
    while length > 0:
        chunk = os.pread(fd, min(length, 1 << 20), offset)
        if not chunk:
            break
        parts.append(chunk)
        offset += len(chunk)
        length -= len(chunk)
    return b"".join(parts)


LINE_BYTES = 45 * 1024  # raw bytes per base64 line: 61,440 characters, under a stream's cut


def read_stream(path: str, ident: list, name: str, size: int, follow: bool = False,
                out=None) -> None:
    """The exec path's fetch: the checked file as a JSON header line, base64
    lines of LINE_BYTES, and a JSON end line with the bytes sent."""
    out = out or sys.stdout
    dfd = open_dir(path, ident, follow)
    try:
        fd = open_file(dfd, name, size)
    finally:
        os.close(dfd)
    try:
        out.write(json.dumps({"ok": {"size": size}}) + "\n")
        offset = 0
        while offset < size:
            data = read_exact(fd, offset, min(LINE_BYTES, size - offset))
            if not data:
                break
            out.write(base64.b64encode(data).decode("ascii") + "\n")
            offset += len(data)
        out.write(json.dumps({"end": offset}) + "\n")
    finally:
        os.close(fd)


def _open_subdir(dfd: int, name: str) -> int | None:
    """``name`` in ``dfd`` opened as a directory without following a link; a
    link (swapped in meanwhile) is unlinked itself and None returned."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=dfd)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
    os.unlink(name, dir_fd=dfd)
    return None


def _empty(dfd: int, depth: int, budget: list) -> None:
    """Remove everything in the directory ``dfd`` without following a link."""
    with os.scandir(dfd) as it:
        entries = []
        for entry in it:
            budget[0] -= 1
            if budget[0] < 0:
                raise Refused(f"more than {MAX_ENTRIES} entries to remove: refused")
            entries.append((entry.name, entry.is_dir(follow_symlinks=False)))
    for name, is_dir in entries:
        if is_dir:
            if depth >= MAX_DEPTH:
                raise Refused(f"directories nested deeper than {MAX_DEPTH}: refused")
            cfd = _open_subdir(dfd, name)
            if cfd is None:
                continue
            try:
                _empty(cfd, depth + 1, budget)
            finally:
                os.close(cfd)
            os.rmdir(name, dir_fd=dfd)
        else:
            try:
                os.unlink(name, dir_fd=dfd)  # a link itself, never what it points at
            except FileNotFoundError:
                pass


def remove_dir(path: str, ident: list) -> dict:
    """Remove the directory perftriage made and everything in it, never
    following a link. A symlink put in its place is removed itself (what it
    points at is left alone); another directory in its place is refused."""
    parent, base = os.path.split(path.rstrip("/"))
    pfd = os.open(parent or ".", os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        try:
            st = os.stat(base, dir_fd=pfd, follow_symlinks=False)
        except FileNotFoundError:
            return {"removed": False, "note": f"{path} was already gone"}
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(base, dir_fd=pfd)
            return {"removed": True, "note": f"{path} had been replaced by "
                                             f"{kind_of(st.st_mode)}: removed that, "
                                             "not what it points at"}
        if [st.st_dev, st.st_ino] != list(ident):
            raise Refused(f"{path} was replaced by another directory: left in place")
        dfd = _open_subdir(pfd, base)
        if dfd is None:
            return {"removed": True, "note": f"{path} had been replaced by a link: removed "
                                             "the link, not what it points at"}
        try:
            dst = os.fstat(dfd)
            if [dst.st_dev, dst.st_ino] != list(ident):
                raise Refused(f"{path} was replaced by another directory: left in place")
            _empty(dfd, 0, [MAX_ENTRIES])
        finally:
            os.close(dfd)
        os.rmdir(base, dir_fd=pfd)
        return {"removed": True, "note": ""}
    finally:
        os.close(pfd)


OPS: dict[str, Callable[..., object]] = {
    "make_dir": make_dir, "list_dir": list_dir, "read_stream": read_stream,
    "remove_dir": remove_dir}


def main(argv: list) -> int:
    """The exec path: one JSON request in argv[1], one JSON line answered
    (``read_stream`` writes its own lines; a failure is then its last line)."""
    req = json.loads(argv[1])
    op = OPS[req.pop("op")]
    try:
        done = op(**req)
        if done is None:
            return 0
        out = {"ok": done}
    except Refused as exc:
        out = {"refused": str(exc)}
    except OSError as exc:
        out = {"error": f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")}
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
