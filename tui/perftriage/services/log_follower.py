"""Log followers: files on any host (across truncation and rotation) and the
output of processes perftriage started, as batched LogLines events.

A file is followed with ``tail -n +1 -F`` under a guard: a shell that
writes one heartbeat byte (``\\x1e``, stripped here) to the channel every
second and kills ``tail`` as soon as that write fails — so when the channel
closes (source closed, app quit, connection lost) no orphan ``tail`` is left
on the host, whether or not the transport kills the remote process itself.

Lines are read in large chunks (``Transport.stream_batches``) and coalesced
into one event per ``FLUSH_S`` (or per ``FLUSH_LINES``), never one per line;
a larger backlog goes out in ``SLICE_LINES`` slices with a yield to the event
loop between them, so keys and frames get through a flood.

The transcript keeps at most ``transcript_cap`` log lines per session; past
that, only the lines that matter for replayed metrics (metric, milestone and
fatal lines) are written, the rest are counted in ``LogLines.dropped``, and a
note says so once. The live state still gets every line.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import operator
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from perftriage.core.model import events as ev
from perftriage.core.parse import logparse
from perftriage.services.hosts import HostRegistry
from perftriage.services.session import Session
from perftriage.transport.base import TransportError

HEARTBEAT = "\x1e"
FLUSH_S = 0.05
FLUSH_LINES = 4096
# a backlog is emitted in slices this long (a few ms of parsing each), with a
# yield between them: a key press crosses several message pumps, each hop
# waits at most one slice
SLICE_LINES = 1024
DEFAULT_TRANSCRIPT_CAP = 200_000


def guarded(start: str, *, epilogue: str = "") -> str:
    """Shell that runs ``start`` (a simple command) and dies with the channel.

    The loop writes HEARTBEAT every second; once the channel is gone that
    write fails (EPIPE / SIGPIPE), or the guard itself gets TERM (a server
    stop), and the guard TERMs its whole process group (``kill 0``) — the
    child and everything it started — then waits for the child to finish
    (so a server shutting down on TERM is not cut short by the guard's exit). Both transports also
    kill that group themselves when a stream is closed (LocalTransport by
    killpg, SSHTransport by a stdin-EOF watchdog); the heartbeat is the
    fallback for a channel that dies without either noticing. No ``setsid``:
    a new process group would escape the transports' group kill.
    """
    return (
        f"{start} &\n"
        "c=$!\n"
        "stop() { trap '' HUP INT TERM PIPE; kill -TERM 0 2>/dev/null; wait $c; exit 143; }\n"
        "trap stop HUP INT TERM PIPE\n"
        "while kill -0 $c 2>/dev/null; do\n"
        "  sleep 1\n"
        "  printf '\\036' || stop\n"
        "done\n"
        "wait $c; rc=$?\n"
        f"{epilogue}"
        "exit $rc\n"
    )


def strip_heartbeats(lines: list[str]) -> list[str]:
    """Remove heartbeat bytes; a line made only of heartbeats is no line."""
    return [ln.replace(HEARTBEAT, "") for ln in lines if not ln or ln.strip(HEARTBEAT)]


def follow_command(path: str, from_start: bool = True, last: int = 100_000) -> str:
    start = "+1" if from_start else str(int(last))
    return guarded(f"tail -n {start} -F -- {shlex.quote(path)} 2>/dev/null")


@dataclass
class Source:
    source_id: str
    host: str
    path: str
    kind: str
    command: str
    task: asyncio.Task | None = None
    on_lines: list[Callable[[list[str]], None]] = field(default_factory=list)
    on_exit: list[Callable[[str], None]] = field(default_factory=list)


class LogFollower:
    def __init__(
        self,
        session: Session,
        hosts: HostRegistry,
        transcript_cap: int = DEFAULT_TRANSCRIPT_CAP,
    ) -> None:
        self.session = session
        self.hosts = hosts
        self.transcript_cap = transcript_cap
        self.recorded = 0  # log lines written to the transcript this session
        self.dropped = 0
        self.sources: dict[str, Source] = {}
        self._cap_noted = False

    # --- opening -----------------------------------------------------------

    def open_file(self, host: str, path: str, *, from_start: bool = True) -> str:
        """Follow ``path`` on ``host``; returns the source id."""
        self.hosts.get(host)  # KeyError for an unknown host, before any event
        return self.open_command(host, follow_command(path, from_start), path=path, kind="file")

    def open_command(
        self,
        host: str,
        command: str,
        *,
        path: str,
        kind: str = "command",
        source_id: str | None = None,
        on_lines: Callable[[list[str]], None] | None = None,
        on_exit: Callable[[str], None] | None = None,
    ) -> str:
        """Stream the output of ``command`` (already guarded/quoted) as a source."""
        transport = self.hosts.get(host).transport
        sid = source_id or self.session.new_id("log")
        src = Source(sid, host, path, kind, command)
        if on_lines:
            src.on_lines.append(on_lines)
        if on_exit:
            src.on_exit.append(on_exit)
        self.sources[sid] = src
        self.session.emit(ev.LogSourceOpened(source_id=sid, host=host, path=path, kind=kind))  # type: ignore[arg-type]
        src.task = asyncio.get_running_loop().create_task(self._pump(src, transport))
        return sid

    # --- closing -----------------------------------------------------------

    async def close(self, source_id: str, reason: str = "closed") -> None:
        src = self.sources.pop(source_id, None)
        if src is None:
            return
        if src.task is not None and not src.task.done():
            src.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await src.task
        self._closed(src, reason)

    async def close_all(self, reason: str = "quit") -> None:
        for sid in list(self.sources):
            await self.close(sid, reason)

    def _closed(self, src: Source, reason: str) -> None:
        state = self.session.state.logs.get(src.source_id)
        if state is not None and state.open:
            self.session.emit(ev.LogSourceClosed(source_id=src.source_id, reason=reason))

    # --- reading -----------------------------------------------------------

    async def _pump(self, src: Source, transport) -> None:
        pending: list[str] = []
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
                self.emit_lines(src, batch)

        async def drain() -> None:
            """Emit a backlog in slices of FLUSH_LINES, yielding to the loop
            between them: one read can bring tens of thousands of lines, and
            a key press must not wait for all of them to be parsed."""
            nonlocal pending
            while len(pending) > SLICE_LINES:
                head, pending = pending[:SLICE_LINES], pending[SLICE_LINES:]
                self.emit_lines(src, head)
                await asyncio.sleep(0)
            flush()
            await asyncio.sleep(0)

        reason = "ended"
        try:
            async for batch in transport.stream_batches(src.command):
                if not batch:
                    continue
                # (C-level test: a generator here costs ~0.3 us a line in a flood)
                if any(map(operator.contains, batch, itertools.repeat(HEARTBEAT))):
                    batch = strip_heartbeats(batch)
                    if not batch:
                        continue
                pending.extend(batch)
                if len(pending) >= FLUSH_LINES or time.monotonic() - last_flush >= FLUSH_S:
                    # a read that finds data buffered never suspends: drain yields so
                    # the UI (keys, frames) runs between slices of a flood
                    await drain()
                elif handle is None:
                    handle = loop.call_later(FLUSH_S, flush)
            flush()
        except asyncio.CancelledError:
            flush()
            reason = "closed"
            raise
        except TransportError as exc:
            flush()
            reason = f"lost: {exc.reason}"
        except OSError as exc:
            flush()
            reason = f"lost: {exc}"
        finally:
            if handle is not None:
                handle.cancel()
            if reason != "closed":
                self.sources.pop(src.source_id, None)
                self._closed(src, reason)
            for cb in src.on_exit:
                cb(reason)

    def emit_lines(self, src: Source, lines: list[str]) -> None:
        """Emit one LogLines batch, honouring the transcript cap."""
        if not lines:
            return
        event = ev.LogLines(source_id=src.source_id, lines=lines)
        record = None
        room = self.transcript_cap - self.recorded
        if room >= len(lines):
            self.recorded += len(lines)
        else:
            head = max(room, 0)
            # scan() is memoised on this list: the reducer reuses it, so past the
            # cap each line is still gated and parsed once, not twice
            keep = lines[:head] + [lines[i] for i in logparse.scan(lines).matters() if i >= head]
            dropped = len(lines) - len(keep)
            self.recorded += len(keep)
            self.dropped += dropped
            record = ev.LogLines(source_id=src.source_id, lines=keep, dropped=dropped)
            event.dropped = dropped
            if not self._cap_noted:
                self._cap_noted = True
                self.session.emit(ev.NoteAdded(
                    text=f"transcript log cap reached ({self.transcript_cap} lines): further "
                         "log lines are shown live; only metric, milestone and error lines "
                         "are recorded"))
        self.session.emit(event, record=record)
        for cb in src.on_lines:
            cb(lines)

