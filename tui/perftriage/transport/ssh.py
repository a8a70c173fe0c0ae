"""SSH transport: one asyncssh connection per host, reused.

Design (see issue 3 and the GUIDE's "facts that bite"):

- **One connection per host**, opened lazily (or kept up by :meth:`maintain`,
  which reconnects with capped exponential backoff and reports
  connecting / up / retrying / down through ``on_state``).
- **run()** goes through a small pool of long-lived remote shells (one
  channel each). A shell pays the host's shell start-up files (a slow
  ``~/.bashrc``, pyenv init...) and the ``preamble`` once; each command then
  runs in a forked subshell, framed by random markers, with its exit status,
  stdout and stderr sent back. That is cheaper than a new channel per command
  (no channel open, no exec, no rc file).
- **stream()** uses a plain channel per stream. The command runs in its own
  process group under a watchdog that kills the group when the channel's
  stdin reaches EOF, i.e. when the stream is closed, cancelled, or the
  connection dies: no orphan ``tail -F`` is left on the host.
- Cancelling or timing out a run kills the command's remote process group
  (the shell announces its pid) and drops that shell from the pool.
- Channels per host are capped below OpenSSH's ``MaxSessions`` (10): the pool
  plus a semaphore for plain channels never exceed ``max_channels``; a
  refused channel open is retried with backoff, then reported as a
  ``channel_limit`` error.
- Host keys are always verified against known_hosts (never
  ``known_hosts=None``). An unknown key is refused with a message saying how
  to accept it; ``accept_new`` records a first-seen key in the known_hosts
  file (asyncssh never writes it) like OpenSSH's
  ``StrictHostKeyChecking=accept-new``; a changed key is always refused.

Remote hosts need ``bash`` (for the shell pool and the stream watchdog).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import secrets
import shlex
import socket
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import asyncssh

from perftriage.transport.base import (
    AUTH,
    CHANNEL_LIMIT,
    DNS,
    HOST_KEY_CHANGED,
    HOST_KEY_UNKNOWN,
    LOST,
    OTHER,
    REFUSED,
    TIMEOUT,
    LineSplitter,
    RunResult,
    TransportError,
    lines_of,
)

StateCallback = Callable[[str, "str | None"], None]

DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts")
PERMANENT = frozenset({HOST_KEY_UNKNOWN, HOST_KEY_CHANGED, AUTH})
BACKOFF_FIRST_S = 0.5
BACKOFF_CAP_S = 10.0
CHANNEL_RETRIES = 8
STREAM_HIGH_WATER = 4 * 1024 * 1024

# A remote bash that runs framed commands: "<marker>\0<command>\0" on stdin.
# Each command runs as a background job (own process group, thanks to set -m)
# with stdin from /dev/null; the shell prints "<m> P <pid>" when it started
# and "<m> X <status>" (stdout) / "<m> E" (stderr) when it is done, then kills
# whatever the command left behind in its group. The shell's own stderr goes
# to /dev/null (bash reports job status there under set -m); commands get the
# channel's stderr as fd 2 (kept on fd 3 in the shell).
_POOL_SCRIPT = r"""set -m
exec 3>&2 2>/dev/null
__pt_r=$2
{ eval "$1"; } </dev/null 2>&3 3>&-
printf '%s R %s\n' "$__pt_r" "$?"; printf '%s R\n' "$__pt_r" >&3
while IFS= read -r -d '' __pt_m && IFS= read -r -d '' __pt_c; do
  { eval "$__pt_c"; } </dev/null 2>&3 3>&- & __pt_p=$!
  printf '%s P %s\n' "$__pt_m" "$__pt_p"
  wait "$__pt_p"; __pt_s=$?
  kill -KILL -- "-$__pt_p"
  printf '%s X %s\n' "$__pt_m" "$__pt_s"; printf '%s E\n' "$__pt_m" >&3
done
"""

# A plain-channel command: preamble + command in their own process group;
# a watchdog job kills that group when the channel's stdin reaches EOF.
_WATCHDOG_SCRIPT = r"""set -m
exec 3>&2 2>/dev/null
{ eval "$1"; eval "$2"; } </dev/null 2>&3 3>&- & __pt_p=$!
{ cat >/dev/null; kill -KILL -- "-$__pt_p"; } 3>&- & __pt_w=$!
wait "$__pt_p"; __pt_s=$?
kill -KILL -- "-$__pt_w" "-$__pt_p"
exit "$__pt_s"
"""


def _bash_command(script: str, *args: str) -> str:
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


# --- targets ------------------------------------------------------------------

_TARGET = re.compile(r"^(?:(?P<user>[^@\s]+)@)?(?P<host>\[[^\]\s]+\]|[^@:\s\[\]]+|[0-9a-fA-F:]+)"
                     r"(?::(?P<port>\d+))?$")


def parse_target(spec: str) -> tuple[str | None, str, int | None]:
    """``user@host:port`` / ``host`` / ``alias`` / ``[v6]:port`` -> (user, host, port)."""
    s = spec.strip()
    if not s or s.startswith("-") or any(c.isspace() for c in s):
        raise ValueError(f"invalid ssh target {spec!r}: expected user@host[:port] or an alias")
    user, _, rest = s.rpartition("@") if "@" in s else (None, "", s)
    host, port = rest, None
    if rest.startswith("["):
        m = re.match(r"^\[([^\]]+)\](?::(\d+))?$", rest)
        if not m:
            raise ValueError(f"invalid ssh target {spec!r}")
        host, port = m.group(1), int(m.group(2)) if m.group(2) else None
    elif rest.count(":") == 1:
        host, _, p = rest.partition(":")
        if not p.isdigit():
            raise ValueError(f"invalid port in ssh target {spec!r}")
        port = int(p)
    if not host or (user is not None and not user):
        raise ValueError(f"invalid ssh target {spec!r}: expected user@host[:port] or an alias")
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"invalid port in ssh target {spec!r}")
    return user, host, port


def known_hosts_name(host: str, port: int | None) -> str:
    return host if port in (None, 22) else f"[{host}]:{port}"


# --- error classification ---------------------------------------------------------


def classify(exc: BaseException, where: str, *, timeout: float | None = None,
             host: str | None = None) -> TransportError:
    """One :class:`TransportError` with a one-line reason for a connect failure."""
    if isinstance(exc, TransportError):
        return exc
    if isinstance(exc, asyncssh.PermissionDenied):
        return TransportError(f"authentication failed for {where} ({exc.reason or 'no key accepted'})",
                              AUTH, host)
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return TransportError(f"host key for {where} could not be verified: {exc.reason}",
                              HOST_KEY_UNKNOWN, host)
    if isinstance(exc, (asyncssh.ConnectionLost, ConnectionResetError, BrokenPipeError)):
        return TransportError(f"connection to {where} lost", LOST, host)
    if isinstance(exc, asyncssh.DisconnectError):
        return TransportError(f"{where} disconnected: {exc.reason or type(exc).__name__}",
                              LOST, host)
    if isinstance(exc, socket.gaierror):
        return TransportError(f"name not resolved: {where} ({exc.strerror or exc})", DNS, host)
    if isinstance(exc, ConnectionRefusedError):
        return TransportError(f"connection refused by {where}", REFUSED, host)
    if isinstance(exc, TimeoutError):
        after = f" after {timeout:g}s" if timeout else ""
        return TransportError(f"connect timeout{after} to {where}", TIMEOUT, host)
    if isinstance(exc, asyncssh.ChannelOpenError):
        return TransportError(
            f"channel limit: {where} refused to open a channel ({exc.reason}); "
            "lower max_channels for this host or raise sshd MaxSessions",
            CHANNEL_LIMIT, host)
    if isinstance(exc, OSError):
        return TransportError(f"cannot connect to {where}: {exc.strerror or exc}", OTHER, host)
    text = str(exc) or type(exc).__name__
    return TransportError(f"{where}: {text}".splitlines()[0], OTHER, host)


# --- asyncssh callbacks -------------------------------------------------------------



# AES-GCM runs inside OpenSSL (AES-NI); asyncssh's chacha20-poly1305 builds a
# cipher context per packet in Python. Measured on loopback: ~25% less client
# CPU per MB streamed and per command, which the 32-host sampler feels most.
PREFERRED_CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes128-ctr",
    "aes192-ctr",
    "aes256-ctr",
)

class _Client(asyncssh.SSHClient):
    def __init__(self, owner: SSHTransport, known: asyncssh.SSHKnownHosts) -> None:
        self.owner = owner
        self.known = known
        self.conn: asyncssh.SSHClientConnection | None = None

    def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
        self.conn = conn

    def connection_lost(self, exc: Exception | None) -> None:
        if self.conn is not None:
            self.owner._connection_lost(self.conn, exc)

    def validate_host_public_key(self, host: str, addr: str, port: int,
                                 key: asyncssh.SSHKey) -> bool:
        """Called only for a key that known_hosts does not trust."""
        return self.owner._untrusted_host_key(self.known, host, addr, port, key)


class _Request:
    """One command in flight on a pool shell."""

    __slots__ = ("marker", "out", "err", "out_scan", "err_scan", "pid", "status",
                 "out_end", "err_end", "done", "pid_known")

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
        self.pid_known: asyncio.Future[int] = loop.create_future()


_LINE_TAIL = re.compile(rb"(-?\d+)\n")


class _PoolShell(asyncssh.SSHClientSession):
    """A long-lived remote bash running framed commands one at a time."""

    def __init__(self, transport: SSHTransport, conn: asyncssh.SSHClientConnection,
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
        self.req: _Request | None = None

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
        elif req.out_end is None:
            req.out += data
            self._scan_out(req)
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

    def _scan_out(self, req: _Request) -> None:
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

    def _scan_err(self, req: _Request) -> None:
        buf = req.err
        tag = req.marker + b" E\n"
        i = buf.find(tag, max(0, req.err_scan - len(tag)))
        if i < 0:
            req.err_scan = len(buf)
            return
        req.err_end = i

    def submit(self, command: str) -> _Request:
        assert self.chan is not None and self.req is None
        marker = b"PT" + secrets.token_hex(12).encode()
        req = _Request(marker, self.loop)
        self.req = req
        self.chan.write(marker + b"\0" + command.encode("utf-8") + b"\0")
        return req

    def finish(self) -> None:
        self.req = None

    def close(self) -> None:
        self.alive = False
        if self.chan is not None:
            with contextlib.suppress(Exception):
                self.chan.write_eof()
            self.chan.close()


class _StreamSession(asyncssh.SSHClientSession):
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


# --- the transport --------------------------------------------------------------------


class SSHTransport:
    """Runs commands on one remote host over one reused SSH connection."""

    def __init__(
        self,
        name: str,
        target: str,
        *,
        preamble: str | None = None,
        ssh_config: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
        known_hosts: str | os.PathLike | None = None,
        client_keys: Sequence[str | os.PathLike] | None = None,
        accept_new_host_key: bool = False,
        max_channels: int = 8,
        pool_size: int | None = None,
        connect_timeout: float = 10.0,
        keepalive_interval: float = 15.0,
        on_state: StateCallback | None = None,
    ) -> None:
        self.name = name
        self.target = target
        self.user, self.host, self.port = parse_target(target)
        self.preamble = preamble
        if ssh_config is None:
            self._config: Any = ()  # asyncssh: ~/.ssh/config when present
        elif isinstance(ssh_config, (str, os.PathLike)):
            self._config = [str(ssh_config)]
        else:
            self._config = [str(p) for p in ssh_config]
        self._known_hosts_override = Path(known_hosts) if known_hosts else None
        self._client_keys = [str(k) for k in client_keys] if client_keys else None
        self.accept_new_host_key = accept_new_host_key
        self.max_channels = max(2, max_channels)
        self.pool_size = pool_size or max(1, min(4, self.max_channels // 2))
        self.pool_size = min(self.pool_size, self.max_channels - 1)
        self.connect_timeout = connect_timeout
        self.keepalive_interval = keepalive_interval
        self.on_state = on_state
        self.channel_retries = CHANNEL_RETRIES  # refused channel opens retried, with backoff
        self.shell_start_timeout = connect_timeout + 30.0  # rc files + preamble, once per shell

        self.state: str = "down"
        self.reason: str | None = None
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lock: asyncio.Lock | None = None
        self._chan_sem: asyncio.Semaphore | None = None
        self._idle: list[_PoolShell] = []
        self._nshells = 0
        self._waiters: list[asyncio.Future] = []
        self._cleanup: set[asyncio.Task] = set()
        self._hostkey_problem: TransportError | None = None
        self._last_error: TransportError | None = None
        self._backoff = 0.0
        self._retry_at = 0.0
        self._maintaining = False
        self._closed = False
        self._where = target

    @classmethod
    def from_config(cls, hc, *, ssh_config=None, accept_new: bool = False,
                    on_state: StateCallback | None = None, **kwargs) -> SSHTransport:
        """The transport for a ``[[hosts]]`` entry (``hc.ssh`` is its target)."""
        return cls(
            hc.name,
            hc.ssh,
            preamble=hc.preamble,
            ssh_config=ssh_config,
            accept_new_host_key=accept_new or hc.accept_new_host_key,
            max_channels=hc.max_channels,
            connect_timeout=hc.connect_timeout,
            keepalive_interval=hc.keepalive_interval,
            on_state=on_state,
            **kwargs,
        )

    # -- state -------------------------------------------------------------------------

    def _set_state(self, state: str, reason: str | None = None) -> None:
        if (state, reason) == (self.state, self.reason):
            return
        self.state, self.reason = state, reason
        if self.on_state is not None:
            self.on_state(state, reason)

    @property
    def connected(self) -> bool:
        return self._conn is not None

    # -- connecting ----------------------------------------------------------------------

    def _options(self) -> asyncssh.SSHClientConnectionOptions:
        return asyncssh.SSHClientConnectionOptions(
            config=self._config, host=self.host,
            **({"port": self.port} if self.port else {}),
            **({"username": self.user} if self.user else {}),
        )

    def _known_hosts_files(self, opts: asyncssh.SSHClientConnectionOptions) -> list[Path]:
        if self._known_hosts_override is not None:
            return [self._known_hosts_override]
        files = opts.known_hosts
        if isinstance(files, (list, tuple)) and files:
            return [Path(f).expanduser() for f in files]
        return [DEFAULT_KNOWN_HOSTS.expanduser()]

    async def _connect(self) -> asyncssh.SSHClientConnection:
        opts = self._options()
        self._where = known_hosts_name(opts.host, opts.port).replace("[", "").replace("]", "")
        if opts.username:
            self._where = f"{opts.username}@{self._where}"
        self._kh_files = self._known_hosts_files(opts)
        text = "\n".join(p.read_text(encoding="utf-8", errors="replace")
                         for p in self._kh_files if p.is_file())
        known = asyncssh.import_known_hosts(text)  # never None: always verified
        self._hostkey_problem = None
        kwargs: dict[str, Any] = {}
        if self._client_keys is not None:
            kwargs["client_keys"] = self._client_keys
        conn, _client = await asyncssh.create_connection(
            lambda: _Client(self, known),
            self.host,
            **({"port": self.port} if self.port else {}),
            **({"username": self.user} if self.user else {}),
            config=self._config,
            known_hosts=known,
            connect_timeout=self.connect_timeout,
            keepalive_interval=self.keepalive_interval,
            keepalive_count_max=3,
            encryption_algs=PREFERRED_CIPHERS,
            **kwargs,
        )
        return conn

    async def connection(self) -> asyncssh.SSHClientConnection:
        """The live connection, connecting (or reconnecting) if needed."""
        if self._conn is not None:
            return self._conn
        if self._closed:
            raise TransportError("transport closed", LOST, self.name)
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._conn is not None:
                return self._conn
            loop = asyncio.get_running_loop()
            if self._maintaining and self._last_error and loop.time() < self._retry_at:
                raise self._last_error  # the maintainer retries; fail fast meanwhile
            self._set_state("retrying" if self._last_error or self.state == "retrying"
                            else "connecting", self.reason)
            try:
                conn = await self._connect()
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - classified into one line
                err = self._hostkey_problem or classify(
                    exc, self._where, timeout=self.connect_timeout, host=self.name)
                err.host = self.name
                self._last_error = err
                self._backoff = (min(BACKOFF_CAP_S, self._backoff * 2) if self._backoff
                                 else BACKOFF_FIRST_S)
                self._retry_at = loop.time() + self._backoff
                if err.kind in PERMANENT:
                    self._set_state("down", err.reason)
                else:
                    self._set_state("retrying", f"{err.reason} (retry in {self._backoff:g}s)")
                raise err from None
            self._conn = conn
            self._last_error = None
            self._backoff = 0.0
            self._set_state("up")
            return conn

    def _connection_lost(self, conn: asyncssh.SSHClientConnection, exc: Exception | None) -> None:
        if conn is not self._conn:
            return
        self._conn = None
        for shell in list(self._idle):
            self._forget_shell(shell)
        if self._closed:
            return
        why = f"connection lost: {exc}" if exc else "connection closed by the server"
        self._last_error = TransportError(why.splitlines()[0], LOST, self.name)
        self._retry_at = 0.0  # first reconnect right away
        self._set_state("retrying", self._last_error.reason)

    async def maintain(self) -> None:
        """Keep the connection up until :meth:`close` (reconnecting with backoff).

        Stops (state ``down``) on errors that retrying cannot fix: an unknown
        or changed host key, or failed authentication.
        """
        self._maintaining = True
        loop = asyncio.get_running_loop()
        try:
            while not self._closed:
                try:
                    conn = await self.connection()
                except TransportError as err:
                    if err.kind in PERMANENT:
                        return
                    await asyncio.sleep(max(0.0, self._retry_at - loop.time()))
                    continue
                with contextlib.suppress(Exception):
                    await self._prewarm(conn)
                await conn.wait_closed()
                if conn is self._conn:  # closed without connection_lost (defensive)
                    self._connection_lost(conn, None)
        finally:
            self._maintaining = False

    async def check(self) -> float:
        """Connect and run ``true``; seconds it took. Raises TransportError."""
        start = time.perf_counter()
        result = await self.run("true", timeout=self.connect_timeout + 10)
        if result.timed_out:
            raise TransportError("remote shell did not answer", TIMEOUT, self.name)
        if result.exit_status != 0:
            raise TransportError(f"`true` exited with {result.exit_status}: "
                                 f"{result.stderr.strip()[:200]}", OTHER, self.name)
        return time.perf_counter() - start

    # -- host keys -------------------------------------------------------------------------

    def _untrusted_host_key(self, known: asyncssh.SSHKnownHosts, host: str, addr: str,
                            port: int, key: asyncssh.SSHKey) -> bool:
        entry = known_hosts_name(host, port)
        files = ", ".join(str(p) for p in self._kh_files)
        fingerprint = key.get_fingerprint()
        trusted = known.match(host, addr, port if port != 22 else None)[0]
        if trusted:
            self._hostkey_problem = TransportError(
                f"HOST KEY CHANGED for {entry}: the server now offers {key.get_algorithm()} "
                f"{fingerprint}, which does not match {files}; this may be a man-in-the-middle "
                f"attack, so the connection is refused (if the change is expected, remove the "
                f"old key with: ssh-keygen -R {shlex.quote(entry)})",
                HOST_KEY_CHANGED, self.name)
            return False
        if not self.accept_new_host_key:
            self._hostkey_problem = TransportError(
                f"host key unknown for {entry} ({key.get_algorithm()} {fingerprint}; not in "
                f"{files}): connection refused; to trust it on first use pass "
                f"--accept-new-host-keys or set accept_new_host_key = true for this host",
                HOST_KEY_UNKNOWN, self.name)
            return False
        try:
            self._record_host_key(entry, key)
        except OSError as exc:
            self._hostkey_problem = TransportError(
                f"could not record the host key of {entry} in {self._kh_files[0]}: {exc}",
                HOST_KEY_UNKNOWN, self.name)
            return False
        return True

    def _record_host_key(self, entry: str, key: asyncssh.SSHKey) -> None:
        path = self._kh_files[0]
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        line = f"{entry} {key.export_public_key('openssh').decode().split()[0]} " \
               f"{key.export_public_key('openssh').decode().split()[1]}\n"
        prefix = ""
        if path.is_file():
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):
                prefix = "\n"
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(prefix + line)

    # -- channels ------------------------------------------------------------------------

    async def _open(self, conn: asyncssh.SSHClientConnection, factory, command: str,
                    retries: int | None = None):
        retries = self.channel_retries if retries is None else retries
        delay = 0.05
        for attempt in range(retries + 1):
            try:
                return await conn.create_session(factory, command, encoding=None)
            except asyncssh.ChannelOpenError as exc:
                if conn.is_closed() or self._conn is not conn:
                    self._connection_lost(conn, None)
                    raise TransportError("connection lost", LOST, self.name) from None
                if attempt == retries:
                    raise classify(exc, self._where, host=self.name) from None
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
            except (asyncssh.DisconnectError, OSError) as exc:
                self._connection_lost(conn, exc)
                raise classify(exc, self._where, host=self.name) from None
        raise AssertionError("unreachable")

    def _sem(self) -> asyncio.Semaphore:
        if self._chan_sem is None:
            self._chan_sem = asyncio.Semaphore(self.max_channels - self.pool_size)
        return self._chan_sem

    # -- the shell pool ------------------------------------------------------------------

    async def _open_shell(self, conn: asyncssh.SSHClientConnection) -> _PoolShell:
        ready = b"PT" + secrets.token_hex(12).encode()
        command = _bash_command(_POOL_SCRIPT, self.preamble or ":", ready.decode())
        _chan, shell = await self._open(conn, lambda: _PoolShell(self, conn, ready), command,
                                        retries=2 if self._nshells > 1 else None)
        try:
            await asyncio.wait_for(asyncio.shield(shell.ready), self.shell_start_timeout)
        except TimeoutError:
            shell.forgotten = True  # its slot is given back by _acquire
            shell.close()
            raise TransportError(
                f"remote shell on {self._where} did not start within "
                f"{self.shell_start_timeout:g}s (slow or stuck shell start-up files?)",
                TIMEOUT, self.name) from None
        except BaseException:
            shell.forgotten = True  # its slot is given back by _acquire
            shell.close()
            raise
        shell.counted = True
        return shell

    async def _acquire(self) -> _PoolShell:
        for attempt in (0, 1):
            conn = await self.connection()
            while True:
                while self._idle:
                    shell = self._idle.pop()
                    if shell.alive and shell.conn is conn:
                        return shell
                    self._forget_shell(shell)
                if self._nshells < self.pool_size:
                    self._nshells += 1
                    try:
                        return await self._open_shell(conn)
                    except TransportError as err:
                        self._nshells -= 1
                        self._wake_one(None)
                        if err.kind == CHANNEL_LIMIT and self._nshells > 0:
                            self.pool_size = max(1, self._nshells)  # server allows fewer
                            continue
                        if err.kind == LOST and attempt == 0:
                            break  # the connection died before we used it: reconnect once
                        raise
                    except BaseException:
                        self._nshells -= 1
                        self._wake_one(None)
                        raise
                fut = asyncio.get_running_loop().create_future()
                self._waiters.append(fut)
                try:
                    shell = await fut
                except asyncio.CancelledError:
                    if fut in self._waiters:
                        self._waiters.remove(fut)
                    if fut.done() and not fut.cancelled() and fut.result() is not None:
                        self._release(fut.result())
                    raise
                if shell is not None:
                    if shell.alive and shell.conn is conn:
                        return shell
                    self._forget_shell(shell)
                if self._conn is not conn:
                    break
        raise TransportError("connection lost", LOST, self.name)

    def _wake_one(self, shell: _PoolShell | None) -> bool:
        while self._waiters:
            fut = self._waiters.pop(0)
            if not fut.done():
                fut.set_result(shell)
                return True
        return False

    def _release(self, shell: _PoolShell) -> None:
        shell.finish()
        if not shell.alive or shell.conn is not self._conn:
            self._forget_shell(shell)
            shell.close()
            return
        if not self._wake_one(shell):
            self._idle.append(shell)

    def _forget_shell(self, shell: _PoolShell) -> None:
        if shell.forgotten:
            return
        shell.forgotten = True
        if shell in self._idle:
            self._idle.remove(shell)
        if shell.counted:
            self._nshells -= 1
            self._wake_one(None)

    async def _prewarm(self, conn: asyncssh.SSHClientConnection) -> None:
        """Open a shell ahead of the first probe (pays the rc files now)."""
        if self._nshells == 0 and conn is self._conn:
            self._release(await self._acquire())

    def _abort(self, shell: _PoolShell, req: _Request) -> None:
        """Kill the command's remote process group, then drop the shell."""
        self._forget_shell(shell)

        async def kill() -> None:
            try:
                pid = await asyncio.wait_for(asyncio.shield(req.pid_known), 10)
                if shell.conn is self._conn and self._conn is not None:
                    await self.run(f"kill -KILL -- -{int(pid)} 2>/dev/null; true", timeout=10)
            except (TransportError, TimeoutError, asyncio.CancelledError):
                pass  # connection gone: sshd closes the shell's pipes; nothing more to do
            finally:
                shell.close()

        if not shell.alive:  # channel gone (connection lost): nothing left to reach
            shell.close()
            return
        task = asyncio.get_running_loop().create_task(kill())
        self._cleanup.add(task)
        task.add_done_callback(self._cleanup.discard)

    # -- Transport protocol --------------------------------------------------------------

    async def run(self, command: str, timeout: float | None = None,
                  stdin: str | None = None) -> RunResult:
        start = time.perf_counter()
        if stdin is not None:
            command = f"printf '%s' {shlex.quote(stdin)} | {{\n{command}\n}}"
        shell = await self._acquire()
        req = shell.submit(command)
        try:
            await asyncio.wait_for(asyncio.shield(req.done), timeout)
        except TimeoutError:
            self._abort(shell, req)
            out = bytes(req.out).decode("utf-8", "replace")
            err = bytes(req.err).decode("utf-8", "replace")
            return RunResult(None, out, err, time.perf_counter() - start, timed_out=True)
        except TransportError:
            self._forget_shell(shell)
            raise
        except BaseException:
            self._abort(shell, req)
            raise
        out = bytes(req.out[: req.out_end]).decode("utf-8", "replace")
        err = bytes(req.err[: req.err_end]).decode("utf-8", "replace")
        status = req.status
        self._release(shell)
        return RunResult(status, out, err, time.perf_counter() - start)

    async def stream_batches(self, command: str) -> AsyncIterator[list[str]]:
        conn = await self.connection()
        wrapped = _bash_command(_WATCHDOG_SCRIPT, self.preamble or ":", command)
        async with self._sem():
            try:
                chan, sess = await self._open(conn, _StreamSession, wrapped)
            except TransportError as err:
                if err.kind != LOST:
                    raise
                conn = await self.connection()  # died before we used it: once more
                chan, sess = await self._open(conn, _StreamSession, wrapped)
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            splitter = LineSplitter()
            try:
                while True:
                    if not sess.chunks and not sess.closed:
                        await sess.wake.wait()
                    if sess.chunks:
                        lines = splitter.feed(decoder.decode(sess.take()))
                        if lines:
                            yield lines
                        continue
                    if sess.closed:
                        break
                if sess.exc is not None:
                    raise TransportError("connection lost while streaming", LOST, self.name)
                tail = splitter.feed(decoder.decode(b"", final=True)) + splitter.flush()
                if tail:
                    yield tail
            finally:
                if not sess.closed:
                    with contextlib.suppress(Exception):
                        chan.write_eof()  # the remote watchdog kills the command
                    chan.close()

    def stream(self, command: str) -> AsyncIterator[str]:
        return lines_of(self.stream_batches(command))

    async def close(self) -> None:
        if self._cleanup:
            with contextlib.suppress(Exception):
                await asyncio.wait(list(self._cleanup), timeout=5)
        self._closed = True
        conn, self._conn = self._conn, None
        for shell in list(self._idle):
            shell.close()
            self._forget_shell(shell)
        if conn is not None:
            conn.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.wait_closed(), 5)
