"""The log lines of a session as the report tells them: notable lines
(ready, OOM, NCCL, tracebacks, errors) grouped by what they say, and decode
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

BURST_S = 10.0  # lines arriving this long after a source's first batch are live
BACKLOG_SLACK_S = 60.0
# what differs between repeats of one line: its time, rank tags, pids
_VARIES = re.compile(r"(?:\d{4}-)?\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?"
                     r"|\b(?:TP|DP|EP|PP|CP)\d+\b|\bpid=\d+")
_EMPTY_BRACKETS = re.compile(r"\[\s*\]|\(\s*\)")


def repeat_key(line: str) -> str:
    """What a line says, without what changes when it repeats."""
    return " ".join(_EMPTY_BRACKETS.sub("", _VARIES.sub("", line)).split())


NOTABLE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("oom", re.compile(r"out of memory|OutOfMemoryError|\bOOM\b", re.I)),
    ("nccl", re.compile(r"NCCL (?:error|WARN)|ncclInternalError|ncclSystemError|NCCL timeout", re.I)),
    ("traceback", re.compile(r"Traceback \(most recent call last\)")),
    ("error", re.compile(r"\b(?:ERROR|FATAL|CRITICAL)\b|RuntimeError|CUDA error|Killed\b")),
)


def classify_log_line(line: str) -> str | None:
    """``ready`` / ``oom`` / ``nccl`` / ``traceback`` / ``error`` or None.
    Ready and error detection follow the log parser (``perftriage.core.parse.logparse``);
    the finer kind of error comes from :data:`NOTABLE_PATTERNS`."""
    rec = logparse.parse_line(line) if ("fired up" in line or "Starting vLLM" in line) else None
    if isinstance(rec, logparse.Milestone) and rec.name == "ready":
        return "ready"
    for kind, pattern in NOTABLE_PATTERNS:
        if pattern.search(line):
            return kind
    if logparse.is_error(line):
        return "error"
    return None


def decode_throughput(line: str) -> tuple[int, float] | None:
    """(running requests, generation tok/s) of one SGLang decode or vLLM
    stats line (parsed by ``perftriage.core.parse.logparse``), else None."""
    rec = logparse.parse_line(line)
    if not isinstance(rec, logparse.Metric) or rec.kind == "prefill" or rec.gen_tps is None:
        return None
    return (rec.running if rec.running is not None else 0), rec.gen_tps


def batch1_ms_per_token(lines: Iterable[str]) -> float | None:
    """ms/token at batch 1 from the newest batch-1 decode line (1000 / tok/s)."""
    latest = None
    for line in lines:
        got = decode_throughput(line)
        if got and got[0] == 1 and got[1] > 0:
            latest = got[1]
    return None if latest is None else 1000.0 / latest


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

    @property
    def logged_at(self) -> datetime | None:
        return self.first.ts if self.first else None


@dataclass
class Throughput:
    """Generation tok/s of every decode line of one source, and of the
    batch-1 ones (flat float arrays: a long session has millions)."""

    source: str
    tps: array = field(default_factory=lambda: array("d"))
    batch1: array = field(default_factory=lambda: array("d"))


_NOTABLE_WORDS = ("rror", "memory", "oom", "nccl", "traceback", "fatal", "critical", "killed",
                  "fired up", "starting vllm", "xception", "atchdog", "pool is full")


class LogScan:
    """Notable lines and decode throughput, fed one batch at a time.

    Notables: a batch, then each of its lines, passes a lower-cased substring
    gate (:data:`_NOTABLE_WORDS`) that lets through every line
    :func:`classify_log_line` can classify, so most batches cost one
    ``lower()``. Only a batch's last line (and a notable line's) is parsed for
    a time. Throughput: the log parser's batch :func:`logparse.scan`."""

    def __init__(self, year: int | None = None) -> None:
        self.notables: list[Notable] = []
        self.year = year or datetime.now(timezone.utc).year
        self._seen: dict[tuple[str, str], Notable] = {}
        self._throughput: dict[str, Throughput] = {}
        self._first_t: dict[str, float] = {}  # a source's first batch: when it opened
        self._last_ts: dict[str, datetime] = {}  # a source's latest timestamp
        self._live: dict[str, tuple[datetime, float]] = {}  # (line time, arrival t)

    def feed(self, t: float | None, source_id: str, lines: list[str]) -> None:
        if not lines:
            return
        first_t = self._first_t.setdefault(source_id, t if t is not None else 0.0)
        in_burst = t is None or t - first_t < BURST_S
        seen, notables = self._seen, self.notables
        blob = "\n".join(lines).lower()  # one gate for the batch: most have nothing notable
        if any(word in blob for word in _NOTABLE_WORDS):
            for i, line in enumerate(lines):
                low = line.lower()
                if not any(word in low for word in _NOTABLE_WORDS):
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
        for line in reversed(lines[-8:]):
            ts = line_time(line, self.year)
            if ts is not None:
                self._last_ts[source_id] = ts
                if not in_burst and t is not None and source_id not in self._live:
                    self._live[source_id] = (ts, t)
                break
        self._feed_throughput(source_id, lines)

    def _time_before(self, source_id: str, lines: list[str], i: int) -> datetime | None:
        """The timestamp of line ``i``, else of the nearest line before it
        (a traceback's lines carry none)."""
        for j in range(i, max(i - 64, -1), -1):
            ts = line_time(lines[j], self.year)
            if ts is not None:
                return ts
        return self._last_ts.get(source_id)

    def _feed_throughput(self, source_id: str, lines: list[str]) -> None:
        # the log parser's batch scan (what decode_throughput would say of
        # each line, with SGLang's common decode shape kept raw); appended
        # straight to the arrays: a long session has a million of these
        tp = None
        for _, rec, _ in logparse.scan(lines).items:
            if type(rec) is tuple:  # fast-shape SGLang decode: (ts, running, usage, gen, queued)
                running, gen = int(rec[1]), float(rec[3])
            elif (isinstance(rec, logparse.Metric) and rec.kind != "prefill"
                  and rec.gen_tps is not None):
                running, gen = (rec.running if rec.running is not None else 0), rec.gen_tps
            else:
                continue
            if tp is None:
                tp = self._throughput.get(source_id)
                if tp is None:
                    tp = self._throughput[source_id] = Throughput(source_id)
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
        for n in self.notables:
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
