"""SSH transport: one asyncssh connection per host, reused.

Design:

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
- Host keys are always verified (:mod:`ssh_hostkeys`).

The shell pool and the stream watchdog are in :mod:`ssh_pool`; targets and
the one-line failure reasons in :mod:`ssh_target`.

Remote hosts need ``bash`` (for the shell pool and the stream watchdog).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import secrets
import shlex
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import asyncssh

from perftriage.transport.base import (
    AUTH,
    CHANNEL_LIMIT,
    HOST_KEY_CHANGED,
    HOST_KEY_UNKNOWN,
    LOST,
    OTHER,
    TIMEOUT,
    LineSplitter,
    RunResult,
    TransportError,
    capped_text,
    encode_command,
    lines_of,
)
from perftriage.transport.ssh_hostkeys import HostKeys, accept_keys_command, known_hosts_name
from perftriage.transport.ssh_streams import STREAM_WAIT_S, StreamSlots, stream_label
from perftriage.transport.ssh_pool import (
    POOL_SCRIPT,
    WATCHDOG_SCRIPT,
    PoolShell,
    Request,
    StreamSession,
    bash_command,
)
from perftriage.transport.ssh_options import SshOptions
from perftriage.transport.ssh_target import classify, parse_target

__all__ = ["SSHTransport", "classify", "known_hosts_name", "parse_target"]

StateCallback = Callable[[str, "str | None"], None]

PERMANENT = frozenset({HOST_KEY_UNKNOWN, HOST_KEY_CHANGED, AUTH})
BACKOFF_FIRST_S = 0.5
BACKOFF_CAP_S = 10.0
CHANNEL_RETRIES = 8

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
        return self.owner._hostkeys.untrusted(self.known, host, addr, port, key)


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
        self._client_keys = [str(k) for k in client_keys] if client_keys else None
        self.max_channels = max(2, max_channels)
        self.pool_size = pool_size or max(1, min(4, self.max_channels // 2))
        self.pool_size = min(self.pool_size, self.max_channels - 1)
        self._pool_want = self.pool_size  # what the pool grows back to when streams end
        self.stream_wait_s = STREAM_WAIT_S
        self.connect_timeout = connect_timeout
        self.keepalive_interval = keepalive_interval
        self.on_state = on_state
        self.channel_retries = CHANNEL_RETRIES  # refused channel opens retried, with backoff
        self.shell_start_timeout = connect_timeout + 30.0  # rc files + preamble, once per shell

        self.state: str = "down"
        self.reason: str | None = None
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lock: asyncio.Lock | None = None
        self._streams = StreamSlots(name)
        self._idle: list[PoolShell] = []
        self._nshells = 0
        self._waiters: list[asyncio.Future] = []
        self._cleanup: set[asyncio.Task] = set()
        self._hostkeys = HostKeys(name, Path(known_hosts) if known_hosts else None,
                                  accept_new_host_key, accept_keys_command(target, self._config))
        self._last_error: TransportError | None = None
        self._backoff = 0.0
        self._retry_at = 0.0
        self._maintaining = False
        self._closed = False
        self._where = target

    @classmethod
    def from_config(cls, hc, ssh: SshOptions = SshOptions(), *,
                    on_state: StateCallback | None = None, **kwargs) -> SSHTransport:
        """The transport for a ``[[hosts]]`` entry (``hc.ssh`` is its target)."""
        return cls(
            hc.name,
            hc.ssh,
            preamble=hc.preamble,
            ssh_config=ssh.config,
            accept_new_host_key=ssh.accept_new_host_keys or hc.accept_new_host_key,
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
    def accept_new_host_key(self) -> bool:
        return self._hostkeys.accept_new

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

    async def _connect(self) -> asyncssh.SSHClientConnection:
        opts = self._options()
        self._where = known_hosts_name(opts.host, opts.port).replace("[", "").replace("]", "")
        if opts.username:
            self._where = f"{opts.username}@{self._where}"
        known = self._hostkeys.load(opts)  # never None: always verified
        kwargs: dict[str, Any] = {}
        if self.port:
            kwargs["port"] = self.port
        if self.user:
            kwargs["username"] = self.user
        if self._client_keys is not None:
            kwargs["client_keys"] = self._client_keys
        conn, _client = await asyncssh.create_connection(
            lambda: _Client(self, known),
            self.host,
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
                err = self._hostkeys.problem or classify(
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

    def _stream_room(self) -> bool:
        """A channel for one more stream: beside the pool's, else one of the
        pool's (an idle shell closes now, a busy one when its command ends)."""
        if len(self._streams.held) < self.max_channels - self.pool_size:
            return True
        if self.pool_size <= 1:
            return False
        self.pool_size -= 1
        for shell in list(self._idle):
            if self._nshells <= self.pool_size:
                break
            self._forget_shell(shell)
            shell.close()
        return True

    def _stream_gone(self, key: int) -> None:
        self._streams.give(key)
        self.pool_size = max(self.pool_size, min(
            self._pool_want, self.max_channels - len(self._streams.held)))

    def _no_channel(self, label: str, wait_s: float) -> str:
        return (f"no SSH channel to {self._where} for {label} within {wait_s:g}s: "
                f"{len(self._streams.held)} streams ({self._streams.labels()}) and "
                f"{self.pool_size} command shell(s) hold the host's max_channels "
                f"{self.max_channels} (OpenSSH's MaxSessions defaults to 10): "
                "close a log or raise max_channels in [[hosts]]")

    # -- the shell pool ------------------------------------------------------------------

    async def _open_shell(self, conn: asyncssh.SSHClientConnection) -> PoolShell:
        ready = b"PT" + secrets.token_hex(12).encode()
        command = bash_command(POOL_SCRIPT, self.preamble or ":", ready.decode())
        _chan, shell = await self._open(conn, lambda: PoolShell(self, conn, ready), command,
                                        retries=2 if self._nshells > 1 else None)
        try:
            async with asyncio.timeout(self.shell_start_timeout):
                await asyncio.shield(shell.ready)
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

    async def _acquire(self) -> PoolShell:
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
                            self._pool_want = min(self._pool_want, self.pool_size)
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

    def _wake_one(self, shell: PoolShell | None) -> bool:
        while self._waiters:
            fut = self._waiters.pop(0)
            if not fut.done():
                fut.set_result(shell)
                return True
        return False

    def _release(self, shell: PoolShell) -> None:
        shell.finish()
        if not shell.alive or shell.conn is not self._conn or self._nshells > self.pool_size:
            # (more shells than the pool keeps: a stream took one's channel)
            self._forget_shell(shell)
            shell.close()
            return
        if not self._wake_one(shell):
            self._idle.append(shell)

    def _forget_shell(self, shell: PoolShell) -> None:
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

    def _abort(self, shell: PoolShell, req: Request) -> None:
        """Kill the command's remote process group, then drop the shell."""
        self._forget_shell(shell)

        async def kill() -> None:
            try:
                async with asyncio.timeout(10):
                    pid = await asyncio.shield(req.pid_known)
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
                  stdin: str | None = None, limit: int | None = None) -> RunResult:
        start = time.perf_counter()
        if stdin is not None:
            command = f"printf '%s' {shlex.quote(stdin)} | {{\n{command}\n}}"
        encode_command(command)  # refuse what cannot be framed before using a shell
        shell = await self._acquire()
        req = shell.submit(command)
        req.limit = limit
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(req.done)
        except TimeoutError:
            self._abort(shell, req)
            out = capped_text(req.out, limit, req.out_dropped)
            err = capped_text(req.err, limit, req.err_dropped)
            return RunResult(None, out, err, time.perf_counter() - start, timed_out=True,
                             stdout_dropped=req.out_dropped, stderr_dropped=req.err_dropped)
        except TransportError:
            self._forget_shell(shell)
            raise
        except BaseException:
            self._abort(shell, req)
            raise
        out = capped_text(req.out[: req.out_end], limit, req.out_dropped)
        err = capped_text(req.err[: req.err_end], limit, req.err_dropped)
        status = req.status
        self._release(shell)
        return RunResult(status, out, err, time.perf_counter() - start,
                         stdout_dropped=req.out_dropped, stderr_dropped=req.err_dropped)

    async def stream_batches(self, command: str, *,
                             label: str | None = None) -> AsyncGenerator[list[str], None]:
        """``label``: what the stream is, named when no channel is left for another."""
        encode_command(command)
        conn = await self.connection()
        wrapped = bash_command(WATCHDOG_SCRIPT, self.preamble or ":", command)
        key = await self._streams.take(label or stream_label(command), self._stream_room,
                                       self.stream_wait_s, self._no_channel)
        try:
            try:
                chan, sess = await self._open(conn, StreamSession, wrapped)
            except TransportError as err:
                if err.kind != LOST:
                    raise
                conn = await self.connection()  # died before we used it: once more
                chan, sess = await self._open(conn, StreamSession, wrapped)
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
        finally:
            self._stream_gone(key)

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
                async with asyncio.timeout(5):
                    await conn.wait_closed()
