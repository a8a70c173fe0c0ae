"""The remote side of the SSH transport: a pool of long-lived bash shells
that run framed commands, and the watchdog that ends a streamed command
with its channel.

A pool shell pays the host's shell start-up files (a slow ``~/.bashrc``,
pyenv init...) and the preamble once; each command then runs in a forked
subshell (its own process group), framed by a random per-command marker,
with its exit status, stdout and stderr sent back.

Framing: a command goes to the shell as ``<marker>\0<command>\0`` and is
read with ``read -d ''``. A shell string cannot hold a NUL byte, so a
command holding one cannot be represented at all: :func:`check_command`
refuses it (one clear line) before anything is written, and every other
byte (0x01-0xff, newlines, quotes, a forged marker) reaches ``eval``
verbatim inside one frame. The marker is random per command and unset
before the command runs, so output cannot forge the end of a frame.

Nothing outlives the channel: the pool shell runs under a guard that
kills its process group (and each command's group) when the channel's
stdin reaches EOF or the connection dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import shlex
from typing import Protocol

import asyncssh

from perftriage.transport.base import LOST, OTHER, TransportError, encode_command, trim_middle

STREAM_HIGH_WATER = 4 * 1024 * 1024


class PoolOwner(Protocol):
    name: str

    def _forget_shell(self, shell: PoolShell) -> None: ...


# A remote bash that runs framed commands: "<marker>\0<command>\0" on stdin.
# Each command runs as a background job (own process group, thanks to set -m)
# with stdin from /dev/null and the framing variables unset; the shell prints
# "<m> P <pid>" when it started and "<m> X <status>" (stdout) / "<m> E"
# (stderr) when it is done, then kills whatever the command left behind in
# its group. While a command runs, a watchdog subshell (builtins only, no
# exec) reads the shell's stdin: nothing is sent to a busy shell, so the only
# thing it can read is EOF -- the channel closed, the connection dropped or
# the client died -- and then it kills the command's group; the shell itself
# then ends at its next read. The watchdog is reaped (not only signalled)
# before the end of the frame is printed: a dying reader could otherwise
# still take the first byte of the next frame. The shell's own stderr goes to /dev/null (bash
# reports job status there under set -m); commands get the channel's stderr
# as fd 2 (kept on fd 3 in the shell).
POOL_SCRIPT = r"""set -m
exec 3>&2 2>/dev/null
__pt_r=$2
{ eval "$1"; } </dev/null 2>&3 3>&-
printf '%s R %s\n' "$__pt_r" "$?"; printf '%s R\n' "$__pt_r" >&3
while IFS= read -r -d '' __pt_m && IFS= read -r -d '' __pt_c; do
  { eval "unset __pt_m __pt_c __pt_r __pt_p __pt_w __pt_s
$__pt_c"; } </dev/null 2>&3 3>&- & __pt_p=$!
  { IFS= read -r -d '' _; kill -KILL -- "-$__pt_p"; } 3>&- & __pt_w=$!
  printf '%s P %s\n' "$__pt_m" "$__pt_p"
  wait "$__pt_p"; __pt_s=$?
  kill -KILL -- "-$__pt_w" "-$__pt_p"; wait "$__pt_w"
  printf '%s X %s\n' "$__pt_m" "$__pt_s"; printf '%s E\n' "$__pt_m" >&3
done
"""

# A plain-channel command: preamble + command in their own process group;
# a watchdog job kills that group when the channel's stdin reaches EOF.
WATCHDOG_SCRIPT = r"""set -m
exec 3>&2 2>/dev/null
{ eval "$1"; eval "$2"; } </dev/null 2>&3 3>&- & __pt_p=$!
{ cat >/dev/null; kill -KILL -- "-$__pt_p"; } 3>&- & __pt_w=$!
wait "$__pt_p"; __pt_s=$?
kill -KILL -- "-$__pt_w" "-$__pt_p"
exit "$__pt_s"
"""


def bash_command(script: str, *args: str) -> str:
    """A command line for the login shell that runs ``script`` in bash.

    The login shell has already read the user's start-up files; the inner
    bash is told not to read them again (``BASH_ENV`` is restored inside so
    commands that start bash themselves behave as usual).
    """
    restore = (
        'if [ -n "$__PT_BASH_ENV" ]; then export BASH_ENV="$__PT_BASH_ENV"; fi; '
        "unset __PT_BASH_ENV; "
    )
    return (
        'exec env __PT_BASH_ENV="${BASH_ENV-}" BASH_ENV= bash --noprofile --norc -c '
        + shlex.quote(restore + script)
        + " perftriage "
        + " ".join(shlex.quote(a) for a in args)
    )


class Request:
    """One command in flight on a pool shell."""

    __slots__ = ("marker", "out", "err", "out_scan", "err_scan", "pid", "status",
                 "out_end", "err_end", "done", "pid_known", "limit", "out_dropped",
                 "err_dropped")

    def __init__(self, marker: bytes, loop: asyncio.AbstractEventLoop) -> None:
        self.marker = marker
        self.out = bytearray()
        self.err = bytearray()
        self.out_scan = 0
        self.err_scan = 0
        self.pid: int | None = None
        self.status: int | None = None
        self.out_end: int | None = None
        self.err_end: int | None = None
        self.done: asyncio.Future[None] = loop.create_future()
        # a lost connection fails it even when nobody waits any more (aborted)
        self.done.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.pid_known: asyncio.Future[int] = loop.create_future()
        self.limit: int | None = None  # bytes kept per stream (plus a tail): run(limit=)
        self.out_dropped = 0
        self.err_dropped = 0


_LINE_TAIL = re.compile(rb"(-?\d+)\n")


class PoolShell(asyncssh.SSHClientSession):
    """A long-lived remote bash running framed commands one at a time."""

    def __init__(self, transport: PoolOwner, conn: asyncssh.SSHClientConnection,
                 ready: bytes) -> None:
        self.transport = transport
        self.conn = conn
        self.chan: asyncssh.SSHClientChannel | None = None
        self.loop = asyncio.get_running_loop()
        self.alive = True  # channel open and usable
        self.forgotten = False  # dropped from the pool
        self.counted = False  # holds one of the pool's slots (set once ready)
        self.ready = self.loop.create_future()
        self._ready_marker = ready
        self._ready_out = False
        self._ready_err = False
        self._boot_out = bytearray()
        self._boot_err = bytearray()
        self.req: Request | None = None

    # asyncssh callbacks
    def connection_made(self, chan: asyncssh.SSHClientChannel) -> None:
        self.chan = chan

    def data_received(self, data: bytes, datatype: int | None) -> None:
        err = datatype == asyncssh.EXTENDED_DATA_STDERR
        if not self.ready.done():
            self._boot(data, err)
            return
        req = self.req
        if req is None:
            return  # output of a stray background process: nobody's
        if err:
            if req.err_end is None:
                req.err += data
                self._scan_err(req)
                if req.err_end is None and req.err_scan == len(req.err):  # no partial marker
                    req.err_dropped = trim_middle(req.err, req.limit, req.err_dropped)
                    req.err_scan = len(req.err)
        elif req.out_end is None:
            req.out += data
            self._scan_out(req)
            if req.out_end is None and req.pid is not None and req.out_scan == len(req.out):
                req.out_dropped = trim_middle(req.out, req.limit, req.out_dropped)
                req.out_scan = len(req.out)
        if req.out_end is not None and req.err_end is not None and not req.done.done():
            req.done.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.alive = False
        if not self.ready.done():
            tail = bytes(self._boot_err[-300:]).decode("utf-8", "replace").strip()
            self.ready.set_exception(TransportError(
                "remote shell did not start" + (f": {tail}" if tail else " (is bash installed?)"),
                OTHER, self.transport.name))
        req = self.req
        if req is not None and not req.done.done():
            req.done.set_exception(TransportError(
                "connection lost mid-command", LOST, self.transport.name))
        self.transport._forget_shell(self)

    # framing
    def _boot(self, data: bytes, err: bool) -> None:
        buf = self._boot_err if err else self._boot_out
        buf += data
        m = self._ready_marker + b" R"
        if err and not self._ready_err and (m + b"\n") in buf:
            self._ready_err = True
            rest = buf[buf.index(m + b"\n") + len(m) + 1:]
        elif not err and not self._ready_out and (m + b" ") in buf:
            i = buf.index(m + b" ")
            nl = buf.find(b"\n", i)
            if nl < 0:
                return
            self._ready_out = True
            rest = buf[nl + 1:]
        else:
            return
        del rest  # nothing is submitted before ready: anything after it is stray
        if self._ready_out and self._ready_err:
            self.ready.set_result(None)

    def _scan_out(self, req: Request) -> None:
        buf, m = req.out, req.marker
        if req.pid is None:
            tag = m + b" P "
            i = buf.find(tag, max(0, req.out_scan - len(tag)))
            if i >= 0:
                mm = _LINE_TAIL.match(buf, i + len(tag))
                if mm is None:
                    return  # line not complete yet
                req.pid = int(mm.group(1))
                del buf[i:mm.end()]
                if not req.pid_known.done():
                    req.pid_known.set_result(req.pid)
            else:
                req.out_scan = len(buf)
                return
        tag = m + b" X "
        i = buf.find(tag, max(0, req.out_scan - len(tag)))
        if i < 0:
            req.out_scan = len(buf)
            return
        mm = _LINE_TAIL.match(buf, i + len(tag))
        if mm is None:
            req.out_scan = i
            return
        req.status = int(mm.group(1))
        req.out_end = i

    def _scan_err(self, req: Request) -> None:
        buf = req.err
        tag = req.marker + b" E\n"
        i = buf.find(tag, max(0, req.err_scan - len(tag)))
        if i < 0:
            req.err_scan = len(buf)
            return
        req.err_end = i

    def submit(self, command: str) -> Request:
        assert self.chan is not None and self.req is None
        marker = b"PT" + secrets.token_hex(12).encode()
        req = Request(marker, self.loop)
        self.req = req
        self.chan.write(marker + b"\0" + encode_command(command) + b"\0")
        return req

    def finish(self) -> None:
        self.req = None

    def close(self) -> None:
        self.alive = False
        if self.chan is not None:
            with contextlib.suppress(Exception):
                self.chan.write_eof()
            self.chan.close()


class StreamSession(asyncssh.SSHClientSession):
    """Collects a plain channel's stdout in chunks for stream_batches()."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.wake = asyncio.Event()
        self.closed = False
        self.exc: Exception | None = None
        self.paused = False
        self.chan: asyncssh.SSHClientChannel | None = None
        self.stderr_tail = b""

    def connection_made(self, chan: asyncssh.SSHClientChannel) -> None:
        self.chan = chan

    def data_received(self, data: bytes, datatype: int | None) -> None:
        if datatype == asyncssh.EXTENDED_DATA_STDERR:
            self.stderr_tail = (self.stderr_tail + data)[-2000:]
            return
        self.chunks.append(data)
        self.size += len(data)
        if self.size > STREAM_HIGH_WATER and self.chan is not None and not self.paused:
            self.paused = True
            self.chan.pause_reading()
        self.wake.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.exc = exc
        self.wake.set()

    def take(self) -> bytes:
        data = b"".join(self.chunks)
        self.chunks.clear()
        self.size = 0
        self.wake.clear()
        if self.paused and self.chan is not None:
            self.paused = False
            self.chan.resume_reading()
        return data
