"""Log followers: files on any host (across truncation, rotation and
connection outages) and the output of processes perftriage started, as
batched LogLines events.

Each followed log is a :class:`~perftriage.services.sources.base.Source`
(:mod:`perftriage.services.sources.logs`: how a file is followed, resumed
after an outage, and how tail's errors become ``log.status`` events). This
module opens and closes them and applies the transcript cap; they run in the
cockpit's list of sources (``Cockpit.sources``), so they stop with it.

A file is followed with ``tail -n +N -F`` under a guard: a shell that
writes one heartbeat byte (``\\x1e``, stripped here) to the channel every
second and kills ``tail`` as soon as that write fails — so when the channel
closes (source closed, app quit, connection lost) no orphan ``tail`` is left
on the host, whether or not the transport kills the remote process itself.

The transcript keeps at most ``transcript_cap`` log lines per session; past
that, only milestone and fatal lines and at most one metric line per
second and source are written (a flood of stats lines would still fill the
disk), the rest are counted in ``LogLines.dropped``, and a note says so once. The live state still gets every line.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from perftriage.core import follow_rules
from perftriage.core.model import events as ev
from perftriage.core.parse import batch_scan
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.sources.logs import (  # noqa: F401 - re-exported for callers
    HEARTBEAT,
    CommandLogSource,
    FileLogSource,
    follow_command,
    guarded,
    strip_heartbeats,
)
from perftriage.services.flood.scan_worker import ScanWorker
from perftriage.services.investigation.session import Session
from perftriage.services.sources.base import SourceSet
from perftriage.transport.base import TransportError

DEFAULT_TRANSCRIPT_CAP = 200_000
# past the cap, at most one metric line per source is recorded per this many
# seconds (a flood of stats lines would otherwise still fill the disk)
METRIC_RECORD_INTERVAL_S = 1.0


class LogFollower:
    def __init__(
        self,
        session: Session,
        hosts: HostRegistry,
        transcript_cap: int = DEFAULT_TRANSCRIPT_CAP,
        running: SourceSet | None = None,
        parse_helper: bool = True,
    ) -> None:
        """``running``: the set the log sources run in (a cockpit's
        ``sources``, so they are stopped with it); by default one of its own.
        ``parse_helper``: parse floods in a helper process (ScanWorker)."""
        self.session = session
        self.hosts = hosts
        self.transcript_cap = transcript_cap
        self.recorded = 0  # log lines written to the transcript this session
        self.dropped = 0
        self.sources: dict[str, CommandLogSource] = {}  # by source id
        self.running = running if running is not None else SourceSet()
        self._cap_noted = False
        self._metric_recorded_at: dict[str, float] = {}  # by source id (monotonic)
        self.scan_worker: ScanWorker | None = ScanWorker() if parse_helper else None

    # --- opening -----------------------------------------------------------

    def open_file(self, host: str, path: str, *, from_start: bool = True) -> str:
        """Follow ``path`` on ``host`` (reconnecting, resuming); returns the source
        id. Already followed: that source. Followed before in this investigation
        (an earlier run, or closed in this one): the same source goes on after
        the lines it read, if the path still names that file and it has not
        shrunk (else from its line 1, saying it was rotated or truncated), so
        no line is read twice."""
        self.hosts.get(host)  # KeyError for an unknown host, before any event
        if (src := self.file_source(host, path)) is not None:
            return src.source_id  # one file, followed once (a server's log in `logs`, `o`)
        earlier = self.earlier_file(host, path)
        sid = earlier.source_id if earlier is not None else self.session.new_id("log")
        # (going on after what was read, not from the last N lines)
        src = FileLogSource(self, sid, host, path, from_start=from_start or earlier is not None)
        if earlier is not None:
            src.lines_seen = earlier.file_line
            if earlier.file_id is not None and earlier.file_size is not None:
                src.file = (*earlier.file_id, earlier.file_size)
        return self._start(src)

    def file_source(self, host: str, path: str) -> CommandLogSource | None:
        """The open source that reads ``path`` on ``host``: its follow, or the
        output of a server started here that writes it (the same lines)."""
        for src in self.sources.values():
            if src.host == host and (
                    (isinstance(src, FileLogSource) and src.path == path)
                    or src.writes_to == path):
                return src
        return None

    async def follow_refusal(self, host: str, path: str) -> str | None:
        """Why ``path`` on ``host``, named by a recording and not by the user,
        is not followed (:mod:`perftriage.core.follow_rules`: the path, then
        what the host says it is), or None when it may be."""
        why = follow_rules.path_refusal(path)
        if why is not None:
            return why
        try:
            transport = self.hosts.get(host).transport
            res = await transport.run(follow_rules.lstat_command(path), timeout=30)
        except KeyError:
            return f"no host {host!r} in this run"
        except (TransportError, OSError) as exc:
            return f"not checked on {host}: {exc}"
        return follow_rules.type_refusal(path, res.stdout)

    def earlier_file(self, host: str, path: str):
        """The latest record of ``path`` on ``host`` followed as a file in this
        investigation, not followed now (a :class:`LogSourceState`), or None."""
        return self.earlier(host, path, "file")

    def earlier(self, host: str, path: str, kind: ev.LogKind):
        """The latest source of ``kind`` named ``path`` on ``host`` in this
        investigation that is not open now (a :class:`LogSourceState`), or None:
        a restarted server's output goes on in its source (one Logs tab)."""
        found = None
        for log in self.session.state.logs.values():
            if log.kind == kind and (log.host, log.path) == (host, path) \
                    and log.source_id not in self.sources:
                found = log
        return found

    def open_command(
        self,
        host: str,
        command: str,
        *,
        path: str,
        kind: ev.LogKind = "command",
        source_id: str | None = None,
        on_lines: Callable[[list[str]], None] | None = None,
        on_exit: Callable[[str], None] | None = None,
        shown_in: str = "",
    ) -> str:
        """Stream the output of ``command`` (already guarded/quoted) as a source;
        ``shown_in``: the source whose tab shows its lines (no tab of its own)."""
        self.hosts.get(host)
        sid = source_id or self.session.new_id("log")
        src = CommandLogSource(self, sid, host, path, kind, command)
        src.shown_in = shown_in
        if on_lines:
            src.on_lines.append(on_lines)
        if on_exit:
            src.on_exit.append(on_exit)
        return self._start(src)

    def _start(self, src: CommandLogSource) -> str:
        self.sources[src.source_id] = src
        self.session.emit(ev.LogSourceOpened(source_id=src.source_id, host=src.host,
                                             path=src.path, kind=src.kind,
                                             shown_in=src.shown_in))
        self.running.add(src)
        return src.source_id

    # --- closing -----------------------------------------------------------

    async def close(self, source_id: str, reason: str = "closed") -> None:
        src = self.sources.pop(source_id, None)
        if src is None:
            return
        await self.running.remove(src.name)
        self._closed(src, reason)

    async def close_all(self, reason: str = "quit") -> None:
        for sid in list(self.sources):
            await self.close(sid, reason)
        if self.scan_worker is not None:
            await self.scan_worker.close()

    def source_ended(self, src: CommandLogSource, reason: str) -> None:
        """A source's run() is over (by itself, or cancelled by close())."""
        if reason != "closed" and self.sources.get(src.source_id) is src:
            # (a server restarted under the same source id has a new one by now)
            self.sources.pop(src.source_id, None)
            self.running.forget(src.name)  # ended by itself: nothing left to stop
            self._closed(src, reason)

    def _closed(self, src: CommandLogSource, reason: str) -> None:
        state = self.session.state.logs.get(src.source_id)
        if state is not None and state.open:
            self.session.emit(ev.LogSourceClosed(source_id=src.source_id, reason=reason))

    # --- the transcript cap --------------------------------------------------

    def emit_lines(self, src: CommandLogSource, lines: list[str],
                   found: batch_scan.Scan | None = None) -> None:
        """Emit one LogLines batch, honouring the transcript cap. ``found``:
        the batch's scan when the parse helper made it; else parsed here,
        once, and handed to the reducer on the event."""
        if not lines:
            return
        if found is None:
            found = batch_scan.scan(lines)
        event = ev.LogLines(source_id=src.source_id, lines=lines).with_scan(found)
        record = None
        room = self.transcript_cap - self.recorded
        if room >= len(lines):
            self.recorded += len(lines)
        else:
            head = max(room, 0)
            # the event's scan serves the cap and the reducer: each line parsed once
            keep = lines[:head] + [lines[i] for i in self._past_cap(src.source_id, found, head)]
            dropped = len(lines) - len(keep)
            self.recorded += len(keep)
            self.dropped += dropped
            record = ev.LogLines(source_id=src.source_id, lines=keep, dropped=dropped)
            event.dropped = dropped
            if not self._cap_noted:
                self._cap_noted = True
                self.session.emit(ev.NoteAdded(
                    text=f"transcript log cap reached ({self.transcript_cap} lines): further "
                         "log lines are shown live; only milestone and error lines, and "
                         "metric lines at most once a second per log, are recorded"))
        self.session.emit(event, record=record)

    def _past_cap(self, source_id: str, found: batch_scan.Scan, head: int) -> list[int]:
        """Offsets (>= ``head``) still recorded past the cap: every milestone
        and fatal line, and the batch's last metric line when the source's
        previous recorded one is at least METRIC_RECORD_INTERVAL_S old."""
        metrics = set(found.metric_offsets())
        keep = [i for i in found.matters() if i >= head and i not in metrics]
        latest = max((i for i in metrics if i >= head), default=None)
        now = time.monotonic()
        last = self._metric_recorded_at.get(source_id)
        if latest is not None and (last is None or now - last >= METRIC_RECORD_INTERVAL_S):
            self._metric_recorded_at[source_id] = now
            keep.append(latest)
        return sorted(keep)

