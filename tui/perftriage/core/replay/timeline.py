"""The index a player seeks with: where each event is, when it happened,
what is worth jumping to, and periodic state snapshots (keyframes).

One streaming pass over the transcript (:meth:`Timeline.scan`, resumable, so
a UI can run it in the background and show the first frame before it ends)
feeds every event through the reducer once, records its byte offset and
time, takes a snapshot of the state every ``spacing`` events and notes
markers. Seeking to event ``i`` is then: copy the keyframe at or before
``i``, decode and apply at most ``spacing`` events — never the whole file.
asciinema could not rewind a pure stream (its issue 133): keyframes are how
players do it.

Memory stays bounded: offsets and times are two flat arrays (16 bytes an
event); keyframes are thinned (every other one dropped, spacing doubled)
when there are more than :data:`MAX_KEYFRAMES`; and a replayed state keeps
:data:`REPLAY_LOG_RING` log lines per source, so a keyframe never holds
more than that many lines.
"""

from __future__ import annotations

import os
import threading
from array import array
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perftriage.core.model import events as ev
from perftriage.core.model import reducer
from perftriage.core.model.findings import top
from perftriage.core.model.state import SessionState
from perftriage.core.replay.snapshot import structural_copy
from perftriage.core.model.segments import segment_label
from perftriage.core.profile.table import short_name
from perftriage.core.store import stream, transcript

KEYFRAME_SPACING = 2048  # events between snapshots to start with
MAX_KEYFRAMES = 64
REPLAY_LOG_RING = 5_000  # log lines kept per source in a replayed state


@dataclass(frozen=True)
class Marker:
    """A moment worth jumping to: the event at ``index`` (0-based) and what it was."""

    index: int
    t: float
    # probe, stacks, ncu, capture, hypothesis, triage, note, gap, error, server, segment,
    # baseline
    kind: str
    label: str


def new_state(header: dict[str, Any], name: str, log_ring: int = REPLAY_LOG_RING) -> SessionState:
    """The state before the first event: the header's hosts, nothing else."""
    state = SessionState(name=name, started_at=str(header.get("started_at", "")))
    state.log_ring = log_ring
    state.log_batches = deque(maxlen=log_ring)
    for host in header.get("hosts", []):
        state.host(str(host))
    return state


def snapshot(state: SessionState) -> SessionState:
    """A copy the reducer can mutate without touching ``state`` (see
    :mod:`perftriage.core.replay.snapshot`)."""
    return structural_copy(state)


def restore(into: SessionState, keyframe: SessionState) -> None:
    """Make ``into`` equal to ``keyframe`` in place (panes hold ``into``)."""
    into.__dict__.update(snapshot(keyframe).__dict__)


WITNESS_PROBES = frozenset({"stacks", "ncu"})  # probe kinds that are markers of their own


def marker_for(state: SessionState, event: ev.Event, index: int, before: Any) -> Marker | None:
    """The marker an event makes, judged after it was applied; ``before`` is
    what :func:`marker_context` returned before applying it."""
    t = event.t
    if isinstance(event, ev.ProbeFinished):
        p = state.probes.get(event.probe_id)
        label = f"{event.probe_id} {p.label if p else ''} → {event.status}".replace("  ", " ")
        # a stacks record and an ncu result are witnesses of the triage: their own kinds
        own = p.kind if p is not None and p.kind in WITNESS_PROBES else "probe"
        return Marker(index, t, own, label)
    if isinstance(event, ev.ProfileCaptured):
        top = event.summary.kernels[0] if event.summary.kernels else None
        # short: the player bar shows it after the position at 100 columns
        what = f": {top.pct:.0f} % {short_name(top.name, 24)}" if top is not None else ""
        return Marker(index, t, "capture", f"{event.capture_id} {event.host}{what}")
    if isinstance(event, ev.HypothesisUpdated) and event.status is not None and before != event.status:
        return Marker(index, t, "hypothesis", f"{event.hyp_id} → {event.status}")
    if isinstance(event, ev.HypothesisAdded):  # a beat of the story, whatever its status
        title = event.title.splitlines()[0][:50] if event.title else ""
        return Marker(index, t, "hypothesis", f"{event.hyp_id} + {title}".rstrip())
    if isinstance(event, ev.TriageUpdated) and not event.same_as:
        cause = top_cause(event)
        if cause != before:  # the triage's top cause of the host changed
            return Marker(index, t, "triage", f"{event.host}: {cause or 'nothing found'}")
    if isinstance(event, ev.NoteAdded):
        return Marker(index, t, "note", event.text.splitlines()[0][:60] if event.text else "note")
    if isinstance(event, ev.GapComputed):
        gap = f" gap {event.gap:.1f}x" if event.gap else ""
        return Marker(index, t, "gap", f"floor {event.floor_ms:.2f} ms/token{gap}")
    if isinstance(event, ev.ServerEvent):
        return Marker(index, t, "server", f"{event.server} {event.state}")
    if isinstance(event, ev.BaselineMarked):
        label = f" {event.label}" if event.label else ""
        return Marker(index, t, "baseline", f"baseline{label}")
    if isinstance(event, ev.SegmentStarted) and event.segment > 1:
        return Marker(index, t, "segment", segment_label(event))
    if isinstance(event, ev.LogLines):
        src = state.logs.get(event.source_id)
        if src is not None and src.errors and src.errors[-1] != before:
            offset = src.errors[-1] - (src.total_lines - len(event.lines))
            text = event.lines[offset] if 0 <= offset < len(event.lines) else "error line"
            return Marker(index, t, "error", text.strip()[:60])
    return None


def marker_context(state: SessionState, event: ev.Event) -> Any:
    """The bit of state a marker is judged against (taken before applying)."""
    if isinstance(event, ev.HypothesisUpdated):
        h = state.hypothesis(event.hyp_id)
        return h.status if h else None
    if isinstance(event, ev.LogLines):
        src = state.logs.get(event.source_id)
        return src.errors[-1] if src is not None and src.errors else None
    if isinstance(event, ev.TriageUpdated):
        told = state.triage.get(event.host)
        return top_cause(told) if told is not None else None
    return None


def top_cause(e: ev.TriageUpdated) -> str:
    """The cause the triage puts first for the host ("" with no finding):
    the one ``top()`` (core/model/findings.py)."""
    got = top(e.findings)
    return got.cause if got is not None else ""


@dataclass
class Timeline:
    path: Path
    header: dict[str, Any]
    name: str
    first_offset: int
    offsets: array = field(default_factory=lambda: array("q"))
    times: array = field(default_factory=lambda: array("d"))
    markers: list[Marker] = field(default_factory=list)
    keyframes: dict[int, SessionState] = field(default_factory=dict)  # position -> state
    spacing: int = KEYFRAME_SPACING
    problems: list[stream.LineProblem] = field(default_factory=list)
    complete: bool = False
    # a transcript still being written (perftriage watch): an unterminated
    # last line is a write in progress, read again once whole; grow() resumes
    follow: bool = False
    _state: SessionState | None = None  # the scanner's running state
    _resume: int = 0  # byte offset where the scan continues
    _next_line: int = 2  # its line number (for problems)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, path: Path | str, spacing: int = KEYFRAME_SPACING) -> "Timeline":
        """Read the header only (fast); :meth:`scan` builds the rest."""
        path = Path(path)
        first, offset = stream.header_and_offset(path)
        if not first.strip():
            raise transcript.TranscriptError(f"{path}: empty file, not a perftriage session")
        header = transcript._parse_header(path, first)
        name = str(header.get("name") or path.stem)
        tl = cls(path=path, header=header, name=name, first_offset=offset, spacing=spacing)
        tl._state = new_state(header, name)
        tl.keyframes[0] = snapshot(tl._state)
        tl._resume = offset
        return tl

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def duration_s(self) -> float:
        return self.times[-1] if self.times else 0.0

    def initial_state(self) -> SessionState:
        return snapshot(self.keyframes[0])

    def scan(self, max_events: int | None = None) -> bool:
        """Index up to ``max_events`` more events (all when None); True when
        the whole file is indexed. Safe to call again to continue."""
        with self._lock:  # a background indexer and a seek may both ask
            return self._scan(max_events)

    def _scan(self, max_events: int | None) -> bool:
        if self.complete:
            return True
        state = self._state
        assert state is not None
        offsets, times, markers = self.offsets, self.times, self.markers
        apply, context, mark = reducer.apply, marker_context, marker_for
        decode, summary_prefix = ev._decoder.decode, stream.SUMMARY_PREFIX
        lineno = self._next_line - 1
        n = 0
        end = self._resume
        for offset, line, terminated in stream.iter_raw(self.path, self._resume):
            lineno += 1
            if not terminated and self.follow:
                lineno -= 1
                break  # being written: read once whole
            end = offset + len(line) + 1
            if not line or line.isspace() or line.startswith(summary_prefix):
                continue
            try:
                event = decode(line)
            except stream.DECODE_ERRORS as exc:
                self.problems.append(stream.line_problem(lineno, line, exc, terminated))
                continue
            before = context(state, event)
            apply(state, event)
            index = len(offsets)
            offsets.append(offset)
            times.append(event.t)
            m = mark(state, event, index, before)
            if m is not None:
                markers.append(m)
            if (index + 1) % self.spacing == 0:
                self._keyframe(index + 1)
            n += 1
            if max_events is not None and n >= max_events:
                self._resume = offset + len(line) + 1
                self._next_line = lineno + 1
                return False
        self._resume, self._next_line = end, lineno + 1
        self.complete = True
        return True

    def grow(self) -> bool:
        """Whether the file has more bytes than were indexed (then the next
        :meth:`scan` reads them): ``tail -f`` for a followed transcript."""
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return False
        with self._lock:
            if self.complete and size > self._resume:
                self.complete = False
            return not self.complete

    def _keyframe(self, position: int) -> None:
        assert self._state is not None
        self.keyframes[position] = snapshot(self._state)
        if len(self.keyframes) > MAX_KEYFRAMES:
            self.spacing *= 2
            self.keyframes = {p: s for p, s in self.keyframes.items() if p % self.spacing == 0}

    def keyframe_before(self, position: int) -> tuple[int, SessionState]:
        keyframes = self.keyframes  # thinning swaps the dict whole (another thread)
        best = max(p for p in list(keyframes) if p <= position)
        return best, keyframes[best]

    def final_state(self) -> SessionState:
        """The scanner's state after the whole file (scans what is left)."""
        self.scan()
        assert self._state is not None
        return self._state

    def index_at_time(self, t: float) -> int:
        """Position (events applied) of the state at time ``t``: every event
        with ``event.t <= t`` applied."""
        from bisect import bisect_right

        return bisect_right(self.times, t)

    def events_from(self, position: int):
        """Decoded events from ``position`` on (position = events applied)."""
        if position >= len(self.offsets):
            return iter(())
        return (e for _, e in stream.iter_events(self.path, self.offsets[position]))
