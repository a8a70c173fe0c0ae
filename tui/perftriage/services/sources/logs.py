"""One followed log as a :class:`~perftriage.services.sources.base.Source`.

:class:`CommandLogSource` streams the output of a command perftriage started
(a server): read once; a lost connection ends it, because a process's output
cannot be resumed.

:class:`FileLogSource` follows a file and survives outages. It counts the
lines of the current file it has received; when the connection or the
follow command breaks it says ``reconnecting`` (since when, and why),
retries with capped backoff, and resumes with ``tail -n +N`` right after
the last line it got -- so lines written during the outage arrive if the
file still has them. Lines are counted rather than bytes: a line count is
exact whatever the encoding, where a byte count of decoded text is not.
``tail``'s own notices (``2>&1``, in order with the data) are not log
lines: a missing or unreadable path is an ``error`` (tail keeps trying), a
directory is ``lost``; a truncation or rotation ends the follow command
after the lines before it, and reading starts again at line 1 of the new
file (so the count of the file's lines is exact at every start).

Before each start of the follow command the file is ``stat``-ed and a
``log.position`` event records where reading starts: line N + 1 of the file
with this device, inode and size. A start after an outage, or a continued
investigation's first start (from the position its earlier runs recorded,
:meth:`LogFollower.open_file <perftriage.services.logs.follower.LogFollower.open_file>`),
reads on from line N + 1 only when the path still names the same file and
it has not shrunk; otherwise it says the file was rotated or truncated (a
note and the event's ``restarted``) and reads it from its line 1.

Lines are read in large chunks (``Transport.stream_batches``) and buffered,
never sent one event per line. The buffer is sent when ``FLUSH_S`` has
passed since the last send or when it holds ``FLUSH_LINES`` lines, as
LogLines events of at most ``SLICE_LINES`` lines each with a yield to the
event loop between them (keys and frames get through a flood); lines that
arrive in a quiet moment are sent ``FLUSH_S`` later by a timer, in one event.
A backlog's slices go through a :class:`~perftriage.services.flood.batch_pipe.BatchPipe`:
they are parsed in the parse helper process while the source reads on, and
emitted in order.
"""

from __future__ import annotations

import asyncio
import operator
import re
import shlex
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TYPE_CHECKING, Literal, Protocol

from perftriage.core.model import events as ev
from perftriage.core.parse import batch_scan
from perftriage.services.flood.batch_pipe import BatchPipe
from perftriage.services.sources.base import BaseSource, SourceState
from perftriage.transport.base import (
    AUTH,
    BAD_COMMAND,
    HOST_KEY_CHANGED,
    HOST_KEY_UNKNOWN,
    TransportError,
    batch_holds,
)

if TYPE_CHECKING:
    from perftriage.services.hosts.registry import HostRegistry
    from perftriage.services.flood.scan_worker import ScanWorker
    from perftriage.services.investigation.session import Session

_is_tail_notice_start = operator.methodcaller("startswith", "tail: ")

HEARTBEAT = "\x1e"
FLUSH_S = 0.05  # buffered lines wait at most this long
FLUSH_LINES = 4096  # ... or until this many are buffered
# the buffer is sent in events of at most this many lines (a few ms of
# parsing each), with a yield between them: a key press crosses several
# message pumps, each hop waits at most one slice
SLICE_LINES = 1024
BACKOFF_FIRST_S = 0.5
# while lines arrive, the followed file's size is recorded this often (a
# log.position without a line): a copytruncate between two runs that regrows
# the file past the size at the start of following is still seen as one
CHECKPOINT_S = 30.0
BACKOFF_CAP_S = 10.0
# a follow state as the Source protocol's connection state
_SOURCE_STATE: dict[ev.LogFollowState, SourceState] = {
    "following": "up", "reconnecting": "retrying", "error": "retrying", "lost": "down"}
# connection failures that retrying cannot fix
GIVE_UP_KINDS = frozenset({AUTH, HOST_KEY_CHANGED, HOST_KEY_UNKNOWN, BAD_COMMAND})


def guarded(start: str, *, epilogue: str = "", signalled: str = "") -> str:
    """Shell that runs ``start`` (a simple command) and dies with the channel.

    The loop writes HEARTBEAT every second; once the channel is gone that
    write fails (EPIPE / SIGPIPE), or the guard itself gets TERM (a server
    stop), and the guard TERMs its whole process group (``kill 0``) — the
    child and everything it started — then waits for the child to finish
    (so a server shutting down on TERM is not cut short by the guard's exit).
    Both transports also kill that group themselves when a stream is closed
    (LocalTransport by killpg, SSHTransport by a stdin-EOF watchdog); the
    heartbeat is the fallback for a channel that dies without either
    noticing. No ``setsid``: a new process group would escape the
    transports' group kill.

    ``signalled``: a line printed (``printf`` format, ``%s`` the signal's
    name) when the guard is stopped by HUP, INT or TERM, so that whoever
    reads the stream can tell a kill from outside from the child's own end
    (on a broken channel it reaches no one, and fails quietly).
    """
    said = f"printf {shlex.quote(signalled)} \"$1\" 2>/dev/null; " if signalled else ""
    return (
        f"{start} &\n"
        "c=$!\n"
        f"stop() {{ trap '' HUP INT TERM PIPE; {said}kill -TERM 0 2>/dev/null; wait $c; "
        "exit 143; }\n"
        "trap 'stop HUP' HUP; trap 'stop INT' INT; trap 'stop TERM' TERM; trap 'stop PIPE' PIPE\n"
        "while kill -0 $c 2>/dev/null; do\n"
        "  sleep 1\n"
        "  printf '\\036' || stop PIPE\n"
        "done\n"
        "wait $c; rc=$?\n"
        f"{epilogue}"
        "exit $rc\n"
    )


def strip_heartbeats(lines: list[str]) -> list[str]:
    """Remove heartbeat bytes; a line made only of heartbeats is no line."""
    return [ln.replace(HEARTBEAT, "") for ln in lines if not ln or ln.strip(HEARTBEAT)]


def follow_command(path: str, start_line: int = 1) -> str:
    """Follow ``path`` from line ``start_line`` (1 = the whole file), with
    tail's notices (C locale, so they read the same everywhere) on stdout."""
    # one heartbeat line first (nothing can be half-written yet): the source
    # knows at once that the command runs, even on a file nobody writes to
    return "printf '\\036\\n'\n" + guarded(
        f"LC_ALL=C exec tail -n +{max(1, int(start_line))} -F -- {shlex.quote(path)} 2>&1")


def stat_command(path: str) -> str:
    """Device, inode and size of the file ``path`` names (links followed, as tail -F does)."""
    return f"LC_ALL=C stat -L -c '%d %i %s' -- {shlex.quote(path)} 2>/dev/null"


def parse_stat(out: str) -> tuple[int, int, int] | None:
    """``(device, inode, size)`` from :func:`stat_command`'s output, else None."""
    parts = out.split()
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    dev, ino, size = (int(p) for p in parts)
    return dev, ino, size


def moved_on(before: tuple[int, int, int], now: tuple[int, int, int] | None) -> str | None:
    """Why the file read before (device, inode, size) is not the one the path
    names now (``now``), or None when reading may go on where it stopped."""
    if now is None:
        return "gone (rotated away)"
    if now[:2] != before[:2]:
        return f"rotated (another file now: inode {before[1]} → {now[1]})"
    if now[2] < before[2]:
        return f"truncated ({before[2]:,} → {now[2]:,} bytes)"
    return None


def count_lines_command(path: str) -> str:
    return f"wc -l < {shlex.quote(path)} 2>/dev/null || echo 0"


# GNU tail's notices (LC_ALL=C). ``restart``: it now reads a new file from its
# start; ``error``: it cannot read the path now and keeps trying; ``lost``: it
# gave up on the path.
_NOTICE = re.compile(
    r"^tail: (?:"
    r"(?P<restart>.* has (?:appeared|been replaced);\s+following new file|.*: file truncated)"
    r"|(?P<error>cannot open .* for reading: .*|.* has become inaccessible: .*)"
    r"|(?P<lost>error reading .*|.*: cannot follow end of this type of file.*|no files remaining)"
    r"|(?P<info>.*inotify.*|.*: no such file or directory)"
    r")$"
)


class LogOwner(Protocol):
    """What a log source needs from whoever opened it (the
    :class:`~perftriage.services.logs.follower.LogFollower`)."""

    @property
    def session(self) -> Session: ...

    @property
    def hosts(self) -> HostRegistry: ...

    @property
    def scan_worker(self) -> ScanWorker | None:
        """The parse helper for floods (None: parse in the app)."""

    def emit_lines(self, src: CommandLogSource, lines: list[str],
                   found: batch_scan.Scan | None = None) -> None:
        """One batch of the source's lines, as a LogLines event (``found``:
        its scan when already parsed)."""

    def source_ended(self, src: CommandLogSource, reason: str) -> None:
        """The source's run() is over (by itself, or cancelled: ``closed``)."""


def failed(exc: BaseException) -> str:
    """Why a follow stopped on an error nobody planned for (a perftriage
    bug): said as such, in the source's state and the transcript, instead of
    an "ended" that reads like the log's own end."""
    return f"failed: {type(exc).__name__}: {exc} (a perftriage error; the follow stopped)"


def notice(line: str) -> tuple[str, str] | None:
    """``(kind, text)`` when ``line`` is one of tail's notices, else None."""
    if not line.startswith("tail: "):
        return None
    m = _NOTICE.match(line)
    if m is None:
        return None
    return m.lastgroup or "info", line[len("tail: "):]


class CommandLogSource(BaseSource):
    """The output of one command as LogLines events (see the module doc)."""

    def __init__(self, follower: LogOwner, source_id: str, host: str, path: str,
                 kind: ev.LogKind, command: str) -> None:
        super().__init__()
        self.follower = follower
        self.source_id = source_id
        self.name = f"log:{source_id}"
        self.host: str = host
        self.path = path
        self.kind = kind
        self.command = command
        self.on_lines: list[Callable[[list[str]], None]] = []
        self.on_exit: list[Callable[[str], None]] = []
        self.restart: str | None = None  # a followed file replaced: why (ends this read)
        self.writes_to: str | None = None  # a server's output also appended to this file
        self.shown_in = ""  # the source whose tab shows its lines (LogSourceOpened)

    @property
    def label(self) -> str:
        """What this source's stream is, named when a host has no channel left."""
        return f"tail -F {self.path}" if self.kind == "file" else f"{self.kind} {self.path}"

    @property
    def task(self) -> asyncio.Task | None:
        return self._task

    def transport(self):
        return self.follower.hosts.get(self.host).transport

    async def run(self) -> None:
        reason = "ended"
        try:
            await self._pump(self.transport().stream_batches(self.command, label=self.label))
        except asyncio.CancelledError:
            reason = "closed"
            raise
        except TransportError as exc:
            reason = f"lost: {exc.reason}"
        except OSError as exc:
            reason = f"lost: {exc}"
        except Exception as exc:  # noqa: BLE001 - a bug here must not read as "ended"
            reason = failed(exc)
        finally:
            self._finish(reason)

    def _finish(self, reason: str) -> None:
        self.set_state("stopped" if reason == "closed" else "down", reason)
        self.follower.source_ended(self, reason)
        for cb in self.on_exit:
            cb(reason)

    # --- reading -------------------------------------------------------------

    def _received(self, batch: list[str]) -> list[str]:
        """The log lines of one read (FileLogSource takes tail's notices out)."""
        return batch

    async def _pump(self, batches: AsyncIterator[list[str]]) -> None:
        pending: list[str] = []
        pipe = BatchPipe(self.emit_lines, self.follower.scan_worker)
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle | None = None
        last_flush = 0.0

        def flush() -> None:
            nonlocal handle, last_flush
            if handle is not None:
                handle.cancel()
                handle = None
            last_flush = time.monotonic()
            if pending:
                batch = pending[:]
                pending.clear()
                pipe.put(batch)

        async def drain() -> None:
            """Emit a backlog in slices, yielding to the loop between them: one
            read can bring tens of thousands of lines, and a key press must not
            wait for all of them to be parsed. A backlog is a flood: its slices
            are parsed in the helper process (BatchPipe) while this reads on."""
            nonlocal handle, last_flush
            if handle is not None:  # (this sends all: a timer flush during a
                handle.cancel()     # yield below would send lines twice)
                handle = None
            backlog = pending[:]
            pending.clear()
            flood = len(backlog) > SLICE_LINES
            sent = 0
            try:
                while sent < len(backlog):
                    pipe.put(backlog[sent:sent + SLICE_LINES], flood=flood)
                    sent += SLICE_LINES
                    await asyncio.sleep(0)
            finally:
                if sent < len(backlog):  # cancelled mid-backlog: the rest is sent at the end
                    pending[:0] = backlog[sent:]
            last_flush = time.monotonic()
            await pipe.room()

        try:
            async for batch in batches:
                if batch_holds(batch, HEARTBEAT):
                    batch = strip_heartbeats(batch)
                batch = self._received(batch)  # (called for a heartbeat too: proof of life)
                pending.extend(batch)
                if self.restart is not None:  # a new file under the name: start again
                    break
                if not batch:
                    continue
                if len(pending) >= FLUSH_LINES or time.monotonic() - last_flush >= FLUSH_S:
                    # a read that finds data buffered never suspends: drain yields so
                    # the UI (keys, frames) runs between slices of a flood
                    await drain()
                elif handle is None:
                    handle = loop.call_later(FLUSH_S, flush)
            flush()
            await pipe.drained()
        finally:
            if handle is not None:
                handle.cancel()
            flush()
            pipe.close_now()  # (cancelled or broken: what is queued is emitted now)
            if isinstance(batches, AsyncGenerator):
                await batches.aclose()  # ends the command now (a break leaves it running)

    def emit_lines(self, lines: list[str], found: batch_scan.Scan | None = None) -> None:
        self.follower.emit_lines(self, lines, found)
        for cb in self.on_lines:
            cb(lines)


class FileLogSource(CommandLogSource):
    """A followed file that reconnects and resumes (see the module doc)."""

    def __init__(self, follower: LogOwner, source_id: str, host: str, path: str, *,
                 from_start: bool = True, last: int = 100_000) -> None:
        super().__init__(follower, source_id, host, path, "file", follow_command(path))
        self.from_start = from_start
        self.last = last
        self.lines_seen = 0  # lines of the current file received: a reconnect resumes after them
        # (device, inode, size) of the file those lines came from, as last recorded
        self.file: tuple[int, int, int] | None = None
        self.follow: ev.LogFollowState | Literal["starting"] = "starting"
        self.follow_reason: str | None = None
        self._gave_up: str | None = None
        self._alive = False  # this attempt's command answered (a heartbeat or a line)
        self._checkpoint_at = time.monotonic()
        self._checkpoint: asyncio.Task | None = None
        self._grew = False  # lines came in since the size was last recorded

    def _status(self, state: ev.LogFollowState, reason: str | None = None) -> None:
        if (state, reason) == (self.follow, self.follow_reason):
            return
        self.follow, self.follow_reason = state, reason
        self.set_state(_SOURCE_STATE[state], reason)
        self.follower.session.emit(ev.LogSourceStatus(
            source_id=self.source_id, state=state, reason=reason))

    async def run(self) -> None:
        transport = self.transport()
        reason = "ended"
        backoff = 0.0
        try:
            if not self.from_start:
                self.lines_seen = await self._lines_before_last(transport)
            await self._locate(transport)
            while True:
                self._alive = False
                self.command = follow_command(self.path, self.lines_seen + 1)
                try:
                    await self._pump(transport.stream_batches(self.command, label=self.label))
                    if self.restart is not None:  # rotated or truncated under tail: its line 1
                        restarted = f"{self.restart}: reading restarts at its line 1"
                        self.restart, self.lines_seen, self.file = None, 0, None
                        await self._locate(transport, restarted)
                        continue
                    why = "the follow command ended"
                except TransportError as exc:
                    if exc.kind in GIVE_UP_KINDS:
                        self._gave_up = exc.reason
                    why = exc.reason
                except OSError as exc:
                    why = str(exc)
                if self._gave_up is not None:
                    reason = f"lost: {self._gave_up}"
                    self._status("lost", self._gave_up)
                    return
                if self._alive:
                    backoff = 0.0  # it ran: the next break starts the backoff afresh
                backoff = min(BACKOFF_CAP_S, backoff * 2) if backoff else BACKOFF_FIRST_S
                if self.follow != "error":
                    self._status("reconnecting", why)
                await asyncio.sleep(backoff)
                await self._locate(transport)  # rotated meanwhile? then from its line 1
        except asyncio.CancelledError:
            reason = "closed"
            raise
        except Exception as exc:  # noqa: BLE001 - a bug here must not read as "ended"
            reason = failed(exc)
            self._status("error", reason)
        finally:
            if self._checkpoint is not None:
                self._checkpoint.cancel()
            self._finish(reason)

    def _maybe_checkpoint(self) -> None:
        """Record the size again once lines came in, at most every
        :data:`CHECKPOINT_S` (a task that waits out the rest of the interval)."""
        if not self._grew or self.file is None or (
                self._checkpoint is not None and not self._checkpoint.done()):
            return
        self._grew = False
        wait = max(0.0, CHECKPOINT_S - (time.monotonic() - self._checkpoint_at))
        self._checkpoint = asyncio.get_running_loop().create_task(self._record_size(wait))

    async def _record_size(self, wait: float) -> None:
        """The file's size, as a ``log.position`` without a line, when it is
        still the file being read and has grown (else tail says what it is)."""
        await asyncio.sleep(wait)
        self._checkpoint_at = time.monotonic()
        try:
            res = await self.transport().run(stat_command(self.path), timeout=30)
        except TransportError:
            return
        now, known = parse_stat(res.stdout), self.file
        if now is not None and known is not None and not moved_on(known, now) and now != known:
            self.file = now
            self.follower.session.emit(ev.LogFilePosition(
                source_id=self.source_id, line=None, dev=now[0], ino=now[1], size=now[2]))
        if self._grew:  # lines came in meanwhile: their size next
            self._checkpoint = None
            self._maybe_checkpoint()

    async def _locate(self, transport, restarted: str | None = None) -> None:
        """Where this start reads from: on after the lines already read when
        the path still names the file they came from, unshrunk; else from
        line 1, saying why. Recorded as a ``log.position`` event
        (``restarted``: tail already said the file is new)."""
        try:
            res = await transport.run(stat_command(self.path), timeout=30)
            now = parse_stat(res.stdout)
        except TransportError:
            return  # the follow command meets the same trouble and says it
        if self.lines_seen and self.file is not None and (why := moved_on(self.file, now)):
            restarted = (f"{why} since line {self.lines_seen:,} was read: "
                         "reading restarts at its line 1")
            self.lines_seen = 0
            self.follower.session.emit(ev.NoteAdded(
                text=f"log {self.host}:{self.path} was {restarted}"))
        if now is None:
            return  # not there yet: tail says so, and reads it from line 1 once it appears
        self.file = now
        self.follower.session.emit(ev.LogFilePosition(
            source_id=self.source_id, line=self.lines_seen, dev=now[0], ino=now[1], size=now[2],
            restarted=restarted))

    async def _lines_before_last(self, transport) -> int:
        """Where ``last`` lines before the end start (absolute lines let a
        reconnect resume exactly)."""
        try:
            res = await transport.run(count_lines_command(self.path), timeout=30)
            total = int((res.stdout.split() or ["0"])[0])
        except (TransportError, ValueError):
            return 0
        return max(0, total - self.last)

    def _received(self, batch: list[str]) -> list[str]:
        self._alive = True  # even a heartbeat says the follow command runs
        if not batch_holds(batch, "tail: ") or not any(map(_is_tail_notice_start, batch)):
            keep = batch
            self.lines_seen += len(batch)
        else:
            keep = []
            for ln in batch:
                found = notice(ln)
                if found is None:
                    keep.append(ln)
                    self.lines_seen += 1
                    continue
                kind, text = found
                if kind == "restart":  # a new file under the name: read from its line 1,
                    self.restart = text  # by a new start (the lines after this one are
                    self._status("following", text)  # read again, counted from 1)
                    break
                elif kind == "error":
                    self._status("error", text)
                elif kind == "lost":
                    self._gave_up = self._gave_up or text
                    self._status("lost", text)
        if self.follow in ("starting", "reconnecting") or (self.follow == "error" and keep):
            self._status("following")
        self._grew = self._grew or bool(keep)
        self._maybe_checkpoint()
        return keep
