"""The log lines of a session as the report tells them: notable lines
(ready, OOM, NCCL, tracebacks, errors, kernel fallbacks, warnings) grouped
by what they say, and decode
throughput per source. Fed one batch at a time, so a million-event
transcript is scanned as it streams, never held.

Repeated lines are one group: the key is the line without its timestamp and
rank tags (``[2026-11-28 09:16:31 TP3]``), so eight ranks logging the same
error every second read as one line ×N with its first and last time.

Backlog: following a log starts with the lines it already had (``tail -n
+1``). Those arrive in the first seconds after the source opened
(:data:`BURST_S`), and their own timestamps say when they were logged. A
line of that burst logged more than :data:`BACKLOG_SLACK_S` before the
source opened is backlog, shown with its own time, not a session time. The
log's clock is calibrated on a line that arrived later (live): its
timestamp minus its arrival time is the server's offset (time zone and
clock skew); with no live line the log is taken to be in UTC.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from perftriage.core.model import events as ev
from perftriage.core.model.state import SessionState
from perftriage.core.parse import logparse
from perftriage.core.parse.log_time import line_time
from perftriage.core.view.log_kinds import classify_log_line, decode_record, repeat_key

BURST_S = 10.0  # lines arriving this long after a source's first batch are live
BACKLOG_SLACK_S = 60.0


@dataclass
class Sighting:
    """One occurrence of a notable line: session time, the line's own
    timestamp (or the nearest one before it), arrived in the opening burst."""

    t: float | None
    ts: datetime | None
    in_burst: bool


@dataclass
class Notable:
    t: float | None
    source: str
    kind: str
    line: str
    count: int = 1
    first: Sighting | None = None
    last: Sighting | None = None
    backlog: int = 0  # how many of the first/last sightings are backlog (0, 1 or 2)

@dataclass
class Throughput:
    """Generation tok/s of every decode line of one source, and of the
    batch-1 ones (flat float arrays: a long session has millions)."""

    source: str
    tps: array = field(default_factory=lambda: array("d"))
    batch1: array = field(default_factory=lambda: array("d"))

    # data parallel: each engine's latest tok/s; ``tps`` then gets their sum
    engines: dict[int, float] = field(default_factory=dict)

    def add_engine(self, index: int, gen: float) -> None:
        """One data-parallel engine's decode line: the total over the engines'
        latest lines is the sample (summed, never one engine after another)."""
        self.engines[index] = gen
        self.tps.append(sum(self.engines.values()))

    def add(self, decode_lines: list[tuple[str, str]]) -> None:
        """(running, gen tok/s) text pairs of SGLang decode lines."""
        tps, batch1 = self.tps, self.batch1
        for running, gen in decode_lines:
            g = float(gen)
            tps.append(g)
            if g > 0 and int(running) == 1:
                batch1.append(g)


_NOTABLE_WORDS = ("rror", "memory", "oom", "nccl", "traceback", "fatal", "critical", "killed",
                  "fired up", "starting vllm", "xception", "atchdog", "pool is full",
                  "warn", "fall", "not available", "not supported")
_UNTIMED_BATCHES = 256  # batches a source keeps unparsed for their time, at most
_QUEUED_LINES = 512  # lines fed before they are read
# SGLang's decode line as the log parser's scan shape (batch_scan._DECODE_SCAN),
# capturing (running, gen tok/s); per line, and over
# many batches joined (one line each: no part of it crosses a newline, so
# findall over the joined lines finds the same lines)
_DECODE_SHAPE = (
    r"\[[0-9]{4}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9](?:\.[0-9]+)?"
    r"(?: (?:TP|PP|EP|CP)[0-9]+)*\] Decode batch[.,] "  # a DP tag: per engine, below
    r"#running-req: ([0-9]{1,15}), #token: [0-9]+, token usage: [0-9]+(?:\.[0-9]+)?, "
    r"(?:cuda graph: (?:True|False), )?"  # (numbers read: logparse.MAX_DIGITS at most)
    r"gen throughput \(token/s\): ([0-9]{1,15}(?:\.[0-9]{1,15})?), #queue-req: [0-9]+(?:, )?")
_DECODE_LINE = re.compile(_DECODE_SHAPE + r"\Z")
_DECODE_LINES = re.compile(r"^" + _DECODE_SHAPE + r"$", re.M)


class LogScan:
    """Notable lines and decode throughput, fed one batch at a time.

    Batches queue up to :data:`_QUEUED_LINES` lines and are read together:
    one regex finds SGLang's decode lines (a busy server's bulk) in all of
    them; when every line is one, that is all there is to do (their fixed
    text holds no notable word). Otherwise each batch, then each of its
    lines, passes a lower-cased substring gate (:data:`_NOTABLE_WORDS`) that
    lets through every line :func:`classify_log_line` can classify, and the
    lines that say "throughput" are read for it (:func:`decode_throughput`).
    A source's time is parsed from its lines only when a notable line or the
    log's clock needs it."""

    def __init__(self, year: int | None = None) -> None:
        self._notables: list[Notable] = []
        self.year = year or datetime.now(timezone.utc).year
        self._seen: dict[tuple[str, str], Notable] = {}
        self._throughput: dict[str, Throughput] = {}
        self._first_t: dict[str, float] = {}  # a source's first batch: when it opened
        self._last_ts: dict[str, datetime] = {}  # a source's latest timestamp (as far as parsed)
        self._untimed: dict[str, list[list[str]]] = {}  # batches fed since, not parsed for it
        self._live: dict[str, tuple[datetime, float]] = {}  # (line time, arrival t)
        self._queue: list[tuple[float | None, str, list[str]]] = []
        self._queued = 0  # lines in the queue
        # by source: lines with a rate whose numbers are past the bounds (kept as text)
        self.unparsed: dict[str, int] = {}

    @property
    def notables(self) -> list[Notable]:
        self._drain()
        return self._notables

    def feed(self, t: float | None, source_id: str, lines: list[str]) -> None:
        if not lines:
            return
        self._queue.append((t, source_id, lines))
        self._queued += len(lines)
        if self._queued >= _QUEUED_LINES:
            self._drain()

    def _drain(self) -> None:
        queue, n = self._queue, self._queued
        if not queue:
            return
        self._queue, self._queued = [], 0
        blob = "\n".join(line for _, _, lines in queue for line in lines)
        decode_lines = _DECODE_LINES.findall(blob)
        if len(decode_lines) != n or blob.count("\n") != n - 1:
            for t, source_id, lines in queue:
                self._feed_batch(t, source_id, lines)
            return
        if all(source_id == queue[0][1] for _, source_id, _ in queue):
            self._throughput_of(queue[0][1]).add(decode_lines)
        else:
            at = 0
            for _, source_id, lines in queue:
                self._throughput_of(source_id).add(decode_lines[at:at + len(lines)])
                at += len(lines)
        for t, source_id, lines in queue:  # only decode lines
            self._timed(t, source_id, lines, self._in_burst(t, source_id))

    def _in_burst(self, t: float | None, source_id: str) -> bool:
        first_t = self._first_t.setdefault(source_id, t if t is not None else 0.0)
        return t is None or t - first_t < BURST_S

    def _feed_batch(self, t: float | None, source_id: str, lines: list[str]) -> None:
        in_burst = self._in_burst(t, source_id)
        low = "\n".join(lines).lower()
        if any(map(low.__contains__, _NOTABLE_WORDS)):
            self._feed_notables(t, source_id, lines, in_burst)
        if "throughput" in low:  # every line with a generation throughput says so
            self._feed_throughput(source_id, lines)
        self._timed(t, source_id, lines, in_burst)

    def _timed(self, t: float | None, source_id: str, lines: list[str], in_burst: bool) -> None:
        """After a batch: the first live one with a time of its own
        calibrates the log's clock; any other may hold the source's latest
        time, parsed only when asked for."""
        if not in_burst and t is not None and source_id not in self._live:
            ts = self._batch_time(lines)
            if ts is not None:
                self._last_ts[source_id] = ts
                self._untimed.pop(source_id, None)
                self._live[source_id] = (ts, t)
                return
        pending = self._untimed.setdefault(source_id, [])
        pending.append(lines)
        if len(pending) >= _UNTIMED_BATCHES:
            self._latest_time(source_id)

    def _batch_time(self, lines: list[str]) -> datetime | None:
        """The time of a batch: the newest among its last 8 lines."""
        for line in reversed(lines[-8:]):
            ts = line_time(line, self.year)
            if ts is not None:
                return ts
        return None

    def _feed_notables(self, t: float | None, source_id: str, lines: list[str],
                       in_burst: bool) -> None:
        seen, notables = self._seen, self._notables
        for i, line in enumerate(lines):
            low = line.lower()
            if not any(map(low.__contains__, _NOTABLE_WORDS)):
                continue
            kind = classify_log_line(line)
            if kind is None:
                continue
            sighting = Sighting(t, self._time_before(source_id, lines, i), in_burst)
            key = (source_id, repeat_key(line.strip()))
            if key in seen:
                seen[key].count += 1
                seen[key].last = sighting
            else:
                seen[key] = Notable(t, source_id, kind, line.strip(), first=sighting,
                                    last=sighting)
                notables.append(seen[key])

    def _latest_time(self, source_id: str) -> datetime | None:
        """The source's latest timestamp: of the newest batch fed so far that
        has one among its last 8 lines. Batches wait unparsed until a time is
        asked for (or :data:`_UNTIMED_BATCHES` of them piled up): the newest
        usually answers, so most batches are never parsed for a time."""
        for lines in reversed(self._untimed.pop(source_id, ())):
            ts = self._batch_time(lines)
            if ts is not None:
                self._last_ts[source_id] = ts
                return ts
        return self._last_ts.get(source_id)

    def _time_before(self, source_id: str, lines: list[str], i: int) -> datetime | None:
        """The timestamp of line ``i``, else of the nearest line before it
        (a traceback's lines carry none)."""
        for j in range(i, max(i - 64, -1), -1):
            ts = line_time(lines[j], self.year)
            if ts is not None:
                return ts
        return self._latest_time(source_id)

    def _throughput_of(self, source_id: str) -> Throughput:
        tp = self._throughput.get(source_id)
        if tp is None:
            tp = self._throughput[source_id] = Throughput(source_id)
        return tp

    def _feed_throughput(self, source_id: str, lines: list[str]) -> None:
        """What :func:`decode_throughput` says of each line (SGLang's common
        decode shape read by one regex, not the whole log parser)."""
        tp = None
        decode = _DECODE_LINE.match
        for line in lines:
            if "throughput" not in line.lower():
                continue
            fast = decode(line)
            if fast is not None:
                running, gen = int(fast.group(1)), float(fast.group(2))
            else:
                try:
                    rec = decode_record(line, strict=True)
                except logparse.BadNumber:
                    self.unparsed[source_id] = self.unparsed.get(source_id, 0) + 1
                    continue
                if rec is None:
                    continue
                if rec.engine_index is not None:
                    (tp := tp or self._throughput_of(source_id)).add_engine(
                        rec.engine_index, rec.gen_tps or 0.0)
                    continue
                running, gen = rec.running or 0, rec.gen_tps or 0.0
            tp = tp or self._throughput_of(source_id)
            tp.tps.append(gen)
            if running == 1 and gen > 0:
                tp.batch1.append(gen)

    def _is_backlog(self, source_id: str, s: Sighting | None, start: datetime | None) -> bool:
        if s is None or not s.in_burst or s.ts is None or start is None:
            return False
        opened = start + timedelta(seconds=self._first_t.get(source_id, 0.0))
        live = self._live.get(source_id)
        # the log's clock minus ours, from a line known to be live (else UTC)
        offset = live[0] - (start + timedelta(seconds=live[1])) if live else timedelta(0)
        return (s.ts - offset) < opened - timedelta(seconds=BACKLOG_SLACK_S)

    def results(self, state: SessionState) -> tuple[list[Notable], list[Throughput]]:
        """Source ids become ``host:path`` labels from the state; each
        notable says whether it is backlog (needs ``state.started_at``)."""
        def label(source_id: str) -> str:
            src = state.logs.get(source_id)
            return f"{src.host}:{src.path}" if src else source_id

        start = session_start(state.started_at)
        notables = []
        for n in self.notables:  # (reads what is still queued)
            backlog = sum(self._is_backlog(n.source, s, start) for s in (n.first, n.last))
            notables.append(Notable(n.t, label(n.source), n.kind, n.line, n.count, n.first,
                                    n.last, backlog))
        for sid, tp in self._throughput.items():
            tp.source = label(sid)
        return notables, list(self._throughput.values())


def session_start(started_at: str) -> datetime | None:
    """The session's start as a naive UTC datetime (log times are naive)."""
    try:
        dt = datetime.fromisoformat(started_at)
    except (TypeError, ValueError):
        return None
    if dt.tzinfo is not None:
        dt = dt.astimezone(timezone.utc).replace(tzinfo=None)
    return dt


def scan_logs(state: SessionState, events: Iterable[ev.Event] | None
              ) -> tuple[list[Notable], list[Throughput]]:
    """Notable lines (with their time when the events are at hand) and the
    decode-throughput samples per log source."""
    start = session_start(state.started_at)
    scan = LogScan(start.year if start else None)
    if events is not None:
        for e in events:
            if isinstance(e, ev.LogLines):
                scan.feed(e.t, e.source_id, e.lines)
    else:
        for sid, src in state.logs.items():
            scan.feed(None, sid, list(src.lines))
    return scan.results(state)
