"""Files on a host for a profile capture: make a private directory, list it,
copy a file here, remove what was made, never following a link the server
put there (:mod:`perftriage.transport.capture_dir` says what is checked).

Three paths, chosen by :func:`open_files`: the local filesystem for the
local host; SFTP on the host's SSH connection; and, where the host's sshd
has no ``sftp`` subsystem (OpenSSH configured so, dropbear, many
containers), an exec channel running ``capture_dir.py`` under ``python3``
with the same checks. ``via`` names the path taken.

SFTP (protocol 3) has no ``openat``, no ``O_NOFOLLOW`` and no inode: there
the directory is checked by ``lstat`` (a directory, not a link, with the
owner and mode it was made with) before and after each file is opened, a
file by ``lstat`` before opening and by ``fstat`` after (a regular file,
the same size, owner and time), hard links by the link count of the
listing's long name, and the directory is renamed to a fresh name before
it is emptied. The local and exec paths hold a checked directory
descriptor instead, which leaves no window at all.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import secrets
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from perftriage.transport import capture_dir
from perftriage.transport.base import OTHER, TIMEOUT, TransportError
from perftriage.transport.capture_dir import Refused, kind_of

FETCH_CHUNK = 4 * 1024 * 1024  # bytes per read and write of a copy


@dataclass
class Listing:
    files: dict[str, int] = field(default_factory=dict)  # regular files (lstat) -> size
    other: dict[str, str] = field(default_factory=dict)  # anything else -> what it is


class SftpUnavailable(TransportError):
    """The host's sshd has no SFTP subsystem (the exec path is used instead)."""


@contextlib.contextmanager
def _new_private(local: Path) -> Iterator[BinaryIO]:
    """The local copy: created here (never an existing file or link), 0600;
    removed again when the copy fails (no partial file is left)."""
    fd = os.open(local, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(local)
        raise


class LocalFiles:
    via = "local"

    def __init__(self, name: str = "localhost") -> None:
        self.name = name
        self._ids: dict[str, list | None] = {}  # directory -> (dev, ino); None: not seen yet
        self._follow: set[str] = set()  # directories the user named (vLLM's own)

    async def make_dir(self, parent: str, prefix: str) -> str:
        made = capture_dir.make_dir(parent, prefix)
        self._ids[made["path"]] = made["id"]
        return made["path"]

    def pin(self, directory: str) -> None:
        """A directory the user named (vLLM's): its path may be a link the
        user made; once seen, it must stay the same directory."""
        self._ids.setdefault(directory, None)
        self._follow.add(directory)

    async def listing(self, directory: str) -> Listing:
        found = capture_dir.list_dir(directory, self._ids.get(directory),
                                     directory in self._follow)
        return self._listed(directory, found)

    def _listed(self, directory: str, found: dict | None) -> Listing:
        if found is None:
            if directory in self._follow:
                return Listing()  # vLLM's directory may appear later
            raise Refused(f"{directory}, made by perftriage, is gone")
        if self._ids.get(directory) is None:
            self._ids[directory] = found["id"]
        return Listing(found["files"], found["other"])

    async def sizes(self, directory: str) -> dict[str, int]:
        return (await self.listing(directory)).files

    def _ident(self, directory: str) -> list:
        ident = self._ids.get(directory)
        if ident is None:
            raise Refused(f"{directory} was never listed: refused to read from it")
        return ident

    async def fetch(self, directory: str, name: str, size: int, local: Path) -> None:
        await asyncio.to_thread(self._copy, directory, name, size, local)

    def _copy(self, directory: str, name: str, size: int, local: Path) -> None:
        dfd = capture_dir.open_dir(directory, self._ident(directory), directory in self._follow)
        try:
            fd = capture_dir.open_file(dfd, name, size)
        finally:
            os.close(dfd)
        try:
            with _new_private(local) as out:
                offset = 0
                while offset < size:
                    data = capture_dir.read_exact(fd, offset, min(FETCH_CHUNK, size - offset))
                    if not data:
                        raise Refused(f"{name} ended at {offset} of {size} bytes: refused")
                    out.write(data)
                    offset += len(data)
        finally:
            os.close(fd)

    async def remove_dir(self, directory: str) -> str:
        """Remove the directory perftriage made; what happened, when unusual."""
        return capture_dir.remove_dir(directory, self._ident(directory))["note"]

    async def close(self) -> None:
        return None


class ExecFiles(LocalFiles):
    """The same operations on a host without SFTP: ``capture_dir.py`` runs
    under the host's ``python3`` over an exec channel, one JSON request per
    call, one JSON line back; a file comes as a stream of base64 lines."""

    via = "exec"
    python = "python3"
    timeout = 60.0
    fallback_reason = ""  # why SFTP was not used (the sshd's answer)

    def __init__(self, transport) -> None:
        super().__init__(transport.name)
        self.transport = transport
        self._script = Path(capture_dir.__file__).read_text(encoding="utf-8")

    def _command(self, op: str, **args) -> str:
        request = json.dumps({"op": op, **args})
        # -I -S: no PYTHON* variables, no site-packages, no sitecustomize or .pth
        # file: nothing on the host (the server's user may write there) runs in it
        return f"{self.python} -I -S -c {shlex.quote(self._script)} {shlex.quote(request)}"

    def _answer(self, op: str, line: str, status: int | None = 0, stderr: str = ""):
        """The helper's JSON answer line as its ``ok`` value; Refused or
        TransportError for what it refused or failed at."""
        if status == 127 or not line:
            why = stderr.strip().splitlines()[-1:] or [f"exit {status}"]
            raise TransportError(f"no SFTP subsystem, and {self.python} could not run the file "
                                 f"helper on the host ({why[0][:200]})", OTHER, self.name)
        try:
            answer = json.loads(line)
        except ValueError:
            raise TransportError(f"the file helper answered no JSON: {line[:200]!r}",
                                 OTHER, self.name) from None
        if "refused" in answer:
            raise Refused(str(answer["refused"]))
        if "error" in answer:
            raise TransportError(f"{op}: {answer['error']}", OTHER, self.name)
        return answer.get("ok", answer)

    async def _call(self, op: str, **args) -> dict:
        res = await self.transport.run(self._command(op, **args), timeout=self.timeout,
                                       limit=1 << 20)
        if res.timed_out:
            raise TransportError(f"{op} on the host took over {self.timeout:g}s", TIMEOUT,
                                 self.name)
        lines = res.stdout.strip().splitlines()
        return self._answer(op, lines[-1] if lines else "", res.exit_status, res.stderr)

    async def make_dir(self, parent: str, prefix: str) -> str:
        made = await self._call("make_dir", parent=parent, prefix=prefix)
        self._ids[made["path"]] = made["id"]
        return made["path"]

    async def listing(self, directory: str) -> Listing:
        found = await self._call("list_dir", path=directory, ident=self._ids.get(directory),
                                 follow=directory in self._follow)
        return self._listed(directory, found)

    async def fetch(self, directory: str, name: str, size: int, local: Path) -> None:
        """One exec channel streams the checked file as base64 lines; at
        most ``size`` bytes are taken, and exactly that many must come."""
        command = self._command("read_stream", path=directory, ident=self._ident(directory),
                                name=name, size=size, follow=directory in self._follow)
        got, header, end = 0, False, None
        stream = self.transport.stream_batches(command)
        try:
            with _new_private(local) as out:
                async with asyncio.timeout(self.timeout + size / (1 << 20)):  # >= 1 MiB/s
                    async for batch in stream:
                        for line in batch:
                            if line.startswith("{"):
                                answer = self._answer("read", line)
                                header = True
                                end = answer.get("end") if isinstance(answer, dict) else None
                                continue
                            data = base64.b64decode(line)
                            got += len(data)
                            if not header or got > size:
                                raise Refused(f"{name}: more than the {size} bytes that were "
                                              "complete came: refused")
                            out.write(data)
        except TimeoutError:
            raise TransportError(f"reading {name} took too long", TIMEOUT, self.name) from None
        finally:
            await stream.aclose()
        if not header:
            self._answer("read", "")
        if end != size or got != size:
            raise Refused(f"{name} ended at {got} of {size} bytes: refused")

    async def remove_dir(self, directory: str) -> str:
        done = await self._call("remove_dir", path=directory, ident=self._ident(directory))
        return done["note"]


def _sftp_kind(attrs) -> str:
    return kind_of(attrs.permissions or 0)


def _links(longname) -> int:
    """The link count in an OpenSSH listing's long name (``-rw-r--r--  2 u g ...``)."""
    parts = (longname or "").split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 1


class SftpFiles:
    """SFTP over an :class:`~perftriage.transport.ssh.SSHTransport`'s connection."""

    via = "SFTP"

    def __init__(self, transport) -> None:
        self.transport = transport
        self.name = transport.name
        self._sftp = None
        self._ids: dict[str, tuple | None] = {}  # directory -> (uid, gid, mode) when made
        self._follow: set[str] = set()

    async def start(self) -> None:
        import asyncssh  # noqa: PLC0415

        if self._sftp is None:
            conn = await self.transport.connection()
            try:
                # a file name that is not UTF-8 stays bytes-exact (and is refused or
                # made safe by name later), never a decode error
                self._sftp = await conn.start_sftp_client(path_errors="surrogateescape")
            except (asyncssh.Error, OSError) as exc:
                raise SftpUnavailable(f"SFTP not available: {exc}", OTHER, self.name) from None

    async def _client(self):
        await self.start()
        return self._sftp

    def _error(self, what: str, exc: Exception) -> TransportError:
        return TransportError(f"{what}: {exc}", OTHER, self.name)

    @staticmethod
    def _ident(attrs) -> tuple:
        return (attrs.uid, attrs.gid, attrs.permissions)

    async def make_dir(self, parent: str, prefix: str) -> str:
        import asyncssh  # noqa: PLC0415

        sftp = await self._client()
        path = f"{parent.rstrip('/')}/{prefix}{secrets.token_hex(6)}"
        try:
            await sftp.mkdir(path, asyncssh.SFTPAttrs(permissions=0o700))
            self._ids[path] = self._ident(await sftp.lstat(path))
        except (asyncssh.SFTPError, OSError) as exc:
            raise self._error(f"cannot create {path}", exc) from None
        return path

    def pin(self, directory: str) -> None:
        self._ids.setdefault(directory, None)
        self._follow.add(directory)

    async def _check_dir(self, directory: str) -> None:
        """``directory`` is still the directory perftriage made (by lstat)."""
        import asyncssh  # noqa: PLC0415

        sftp = await self._client()
        try:
            attrs = await (sftp.stat if directory in self._follow else sftp.lstat)(directory)
        except asyncssh.SFTPNoSuchFile:
            raise FileNotFoundError(directory) from None
        except (asyncssh.SFTPError, OSError) as exc:
            raise self._error(f"cannot look at {directory}", exc) from None
        if attrs.type != asyncssh.FILEXFER_TYPE_DIRECTORY:
            raise Refused(f"{directory} is no longer the directory perftriage made: it is "
                          f"{_sftp_kind(attrs)} now (refused to follow it)")
        known = self._ids.get(directory)
        if known is None:
            self._ids[directory] = self._ident(attrs)
        elif self._ident(attrs) != known:
            raise Refused(f"{directory} was replaced by another directory (owner or mode "
                          "differ from the one perftriage made): refused")

    async def listing(self, directory: str) -> Listing:
        import asyncssh  # noqa: PLC0415

        sftp = await self._client()
        try:
            await self._check_dir(directory)
        except FileNotFoundError:
            if directory in self._follow:
                return Listing()
            raise Refused(f"{directory}, made by perftriage, is gone") from None
        found = Listing()
        try:
            n = 0
            async for entry in sftp.scandir(directory):
                if entry.filename in (".", ".."):
                    continue
                n += 1
                if n > capture_dir.MAX_ENTRIES:
                    raise Refused(f"{directory} holds more than {capture_dir.MAX_ENTRIES} "
                                  "entries: refused")
                what = kind_of(entry.attrs.permissions or 0, _links(entry.longname))
                if what == "a regular file":
                    found.files[entry.filename] = int(entry.attrs.size or 0)
                else:
                    found.other[entry.filename] = what
        except asyncssh.SFTPNoSuchFile:
            raise Refused(f"{directory} vanished while it was listed") from None
        except (asyncssh.SFTPError, OSError) as exc:
            raise self._error(f"cannot list {directory}", exc) from None
        return found

    async def sizes(self, directory: str) -> dict[str, int]:
        return (await self.listing(directory)).files

    async def fetch(self, directory: str, name: str, size: int, local: Path) -> None:
        import asyncssh  # noqa: PLC0415

        sftp = await self._client()
        path = f"{directory.rstrip('/')}/{name}"

        def same(attrs, before=None) -> None:
            what = _sftp_kind(attrs)
            if what != "a regular file":
                raise Refused(f"{name} is {what}, not a regular file: refused")
            if attrs.size != size:
                raise Refused(f"{name} changed size after it was complete ({size} -> "
                              f"{attrs.size} bytes): refused")
            if before is not None and (attrs.uid, attrs.mtime) != (before.uid, before.mtime):
                raise Refused(f"{name} was replaced while it was opened: refused")

        try:
            await self._check_dir(directory)
            first = await sftp.lstat(path)
            same(first)
            async with sftp.open(path, "rb") as remote:
                same(await remote.stat(), first)
                await self._check_dir(directory)  # still ours once the file is open
                same(await sftp.lstat(path), first)
                with _new_private(local) as out:
                    offset = 0
                    while offset < size:
                        data = await remote.read(min(FETCH_CHUNK, size - offset), offset)
                        if not data:
                            raise Refused(f"{name} ended at {offset} of {size} bytes: refused")
                        out.write(data)
                        offset += len(data)
        except FileNotFoundError:
            raise Refused(f"{directory}, made by perftriage, is gone") from None
        except asyncssh.SFTPNoSuchFile:
            raise Refused(f"{name} vanished before it was read") from None
        except (asyncssh.SFTPError, OSError) as exc:
            raise self._error(f"cannot fetch {path}", exc) from None

    async def _empty(self, sftp, directory: str, depth: int, budget: list) -> None:
        import asyncssh  # noqa: PLC0415

        entries = []
        async for entry in sftp.scandir(directory):
            if entry.filename in (".", ".."):
                continue
            budget[0] -= 1
            if budget[0] < 0:
                raise Refused(f"more than {capture_dir.MAX_ENTRIES} entries to remove: refused")
            entries.append((entry.filename, entry.attrs.type == asyncssh.FILEXFER_TYPE_DIRECTORY))
        for name, is_dir in entries:
            path = f"{directory}/{name}"
            if is_dir:
                if depth >= capture_dir.MAX_DEPTH:
                    raise Refused(f"directories nested deeper than {capture_dir.MAX_DEPTH}: "
                                  "refused")
                await self._empty(sftp, path, depth + 1, budget)
                await sftp.rmdir(path)
            else:
                with contextlib.suppress(asyncssh.SFTPNoSuchFile):
                    await sftp.remove(path)  # a link itself, never what it points at

    async def remove_dir(self, directory: str) -> str:
        """Remove the directory perftriage made: renamed to a fresh name first
        (so no later swap of the old name is followed), checked, emptied
        without following a link, removed."""
        import asyncssh  # noqa: PLC0415

        sftp = await self._client()
        try:
            attrs = await sftp.lstat(directory)
        except asyncssh.SFTPNoSuchFile:
            return f"{directory} was already gone"
        except (asyncssh.SFTPError, OSError) as exc:
            raise self._error(f"cannot look at {directory}", exc) from None
        try:
            if attrs.type != asyncssh.FILEXFER_TYPE_DIRECTORY:
                await sftp.remove(directory)
                return (f"{directory} had been replaced by {_sftp_kind(attrs)}: removed that, "
                        "not what it points at")
            if self._ident(attrs) != self._ids.get(directory):
                raise Refused(f"{directory} was replaced by another directory: left in place")
            moved = f"{directory}.removing-{secrets.token_hex(4)}"
            await sftp.rename(directory, moved)
            attrs = await sftp.lstat(moved)
            if attrs.type != asyncssh.FILEXFER_TYPE_DIRECTORY:
                await sftp.remove(moved)
                return (f"{directory} had been replaced by {_sftp_kind(attrs)}: removed that, "
                        "not what it points at")
            await self._empty(sftp, moved, 0, [capture_dir.MAX_ENTRIES])
            await sftp.rmdir(moved)
        except (asyncssh.SFTPError, OSError) as exc:
            raise self._error(f"cannot remove {directory}", exc) from None
        return ""

    async def close(self) -> None:
        if self._sftp is not None:
            self._sftp.exit()
            self._sftp = None


async def open_files(transport):
    """The file access that goes with a transport: local files, else SFTP,
    else (no SFTP subsystem) the exec path. Raises TransportError when the
    host cannot be reached."""
    if getattr(transport, "connection", None) is None:
        return LocalFiles(getattr(transport, "name", "localhost"))
    sftp = SftpFiles(transport)
    try:
        await sftp.start()
        return sftp
    except SftpUnavailable as exc:
        files = ExecFiles(transport)
        files.fallback_reason = exc.reason
        return files
