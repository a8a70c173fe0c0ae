"""The cockpit's baseline (``b``): the before of a before/after, and the
live state's verdicts against it.

A :class:`Baseline` feeds every event of the session into a live
:class:`~perftriage.core.compare.recording.Recording` (a session listener),
keeping a few minutes of readings. Marking a baseline emits
``baseline.marked`` (so replay and ``watch`` show it) and keeps the
baseline window's readings: from the live recording when it still holds
them, else read once from the transcript (an earlier run of a continued
investigation). :meth:`Baseline.result` is the comparison of the baseline
with the last :data:`LIVE_S` seconds, the same JSON as ``perftriage
compare``, computed at most once a second.

A replay (a whole transcript, played or read) has a :class:`Baseline` too,
made with the transcript: its recording is the transcript's, read once when
first compared, and "now" is the replay's position (the session's state is
the player's): at every moment of a replay the views show the verdicts the
cockpit computed then, by the same code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perftriage.core.compare.compare import Side, compare
from perftriage.core.compare.load import load
from perftriage.core.compare.recording import Recording
from perftriage.core.clock import clock
from perftriage.core.compare.slices import SliceError, Window, parse_slice, window
from perftriage.core.model import events as ev
from perftriage.core.store.transcript import TranscriptError
from perftriage.core.triage import same_machine
from perftriage.services.investigation.session import Session
# a replay's transcript up to SYNC_READ_MAX_BYTES is read when first compared, a
# larger one in a thread (a name here: a test makes every transcript "large")
from perftriage.services.investigation.whole_read import SYNC_READ_MAX_BYTES, read_whole
LIVE_S = 30.0  # the live side: this much of the latest readings
KEEP_S = 300.0  # the live recording keeps this much (a baseline "now" takes 30 s of it)
NOW = "now"
LOG_EVERY_S = 0.25  # a log source's batches read at most this often (a flood's are many)


class BaselineError(ValueError):
    """What ``b`` was given cannot be a baseline (with the reason)."""


def _copy_window(rec: Recording, start: float, end: float) -> Recording:
    """The readings of ``rec`` inside ``[start, end]`` and its timelines, apart."""
    rec.flush()
    out = Recording(name=rec.name, duration=rec.duration, segments=list(rec.segments),
                    servers=list(rec.servers), profiles=list(rec.profiles),
                    versions=list(rec.versions), server_info=list(rec.server_info),
                    hypotheses={k: list(v) for k, v in rec.hypotheses.items()},
                    checks={k: list(v) for k, v in rec.checks.items()},
                    gpus={k: list(v) for k, v in rec.gpus.items()},
                    log_hosts=dict(rec.log_hosts),
                    # what the triage reads of the window (stacks, ncu, slowed clocks)
                    stacks=list(rec.stacks), ncu=list(rec.ncu),
                    throttles={k: [r for r in v if start <= r[0] <= end]
                               for k, v in rec.throttles.items()})
    for key, series in rec.series.items():
        ts, vs = series.between(start, end)
        if ts:
            copy = out._series(*key)
            copy.t.extend(ts)
            copy.v.extend(vs)
    return out


class Baseline:
    def __init__(self, session: Session, transcript: Path | None = None) -> None:
        """Live: fed every event the session emits. With ``transcript`` (a
        replay's, whole): its recording, read when first compared."""
        self.session = session
        self.transcript = transcript
        self._live: Recording | None = None
        self.before: Recording | None = None  # the baseline window's readings
        self._before_for: tuple[float, float] | None = None
        self._cache: tuple[int, Any, dict[str, Any] | None] | None = None
        self._pruned_at = 0.0
        self._unsubscribe: Callable[[], None] = lambda: None
        self._reader: threading.Thread | None = None  # a large replay transcript's read
        if transcript is not None:
            return
        # live log batches come with their scan (the reducer's): read from it, no regex
        # again, and during a flood a few batches a second (per-second readings are medians)
        self._live = Recording(name=session.state.name, bulk_logs=False,
                               log_every_s=LOG_EVERY_S)
        # what the session knew before this listened (a continued investigation)
        state = session.state
        self._live.log_hosts = {sid: src.host for sid, src in state.logs.items()}
        self._live.segments = [(s.segment, s.t) for s in state.segments]
        self._live.servers = list(state.server_events)
        self._live.gpu_uuids = same_machine.uuids_of(state)  # hosts of one machine
        self._unsubscribe = session.subscribe(self._on_event)

    @property
    def live(self) -> Recording:
        """The readings the last :data:`LIVE_S` seconds are read from: the
        session's as they come, or a replay's transcript read whole — at once
        when small, else in a thread, with nothing to compare until it is in
        (a 1M-event transcript read on the UI's thread froze the replay)."""
        if self._live is not None:
            return self._live
        assert self.transcript is not None
        if self._reader is None:
            self._reader = read_whole(self.transcript, self._read_in_thread,
                                      "baseline-transcript", SYNC_READ_MAX_BYTES)
            if self._live is not None:  # small: read at once
                return self._live
        return Recording(name=self.session.state.name)  # still reading: nothing yet

    @property
    def reading(self) -> bool:
        """A replay's transcript is being read: no comparison until it is."""
        return self._live is None and self._reader is not None

    def _read(self) -> Recording:
        assert self.transcript is not None
        try:
            return load(self.transcript)
        except (TranscriptError, OSError):  # gone or replaced since the replay read it
            return Recording(name=self.session.state.name)

    def _read_in_thread(self) -> None:
        self._live = self._read()  # one assignment: the UI sees all of it or none

    def close(self) -> None:
        self._unsubscribe()

    def _on_event(self, event: ev.Event) -> None:
        self.live.feed(event)
        if event.t - self._pruned_at > KEEP_S:
            self._pruned_at = event.t
            self.live.prune(event.t - KEEP_S)

    # --- marking ------------------------------------------------------------------

    def window_for(self, text: str) -> Window:
        """``now`` (the last 30 s), ``#N`` / ``run N`` (a run), ``FROM-TO``
        (session time; either end open)."""
        text = text.strip()
        state = self.session.state
        now = state.last_t
        if text in ("", NOW):
            start = max(0.0, now - LIVE_S)
            return Window(f"{clock(start)}–{clock(now)}", start, now)
        if text.startswith("run "):
            text = "#" + text[4:].strip()
        suffix = text if text.startswith("#") else "@" + text
        runs = [(s.segment, s.t) for s in state.segments]
        try:
            spec = parse_slice(f"this{suffix}")
            w = window(spec, runs, now, label=text)
        except SliceError as exc:
            raise BaselineError(str(exc).removeprefix(f"this{suffix}: ")) from None
        if spec.segment is not None:
            return Window(f"run {spec.segment}", w.start, w.end)
        return Window(f"{clock(w.start)}–{clock(w.end)}", w.start, w.end)

    def mark(self, text: str) -> ev.BaselineMarked:
        w = self.window_for(text)
        if w.length <= 0:
            raise BaselineError("an empty window: nothing recorded in it yet")
        marked = ev.BaselineMarked(start=w.start, end=w.end, label=w.label)
        self.session.emit(marked)
        return marked

    def clear(self) -> None:
        self.session.emit(ev.BaselineCleared())

    # --- comparing ------------------------------------------------------------------

    def _readings_of(self, b: ev.BaselineMarked) -> Recording:
        """The baseline window's readings (kept, or read once from the transcript)."""
        if self.before is not None and self._before_for == (b.start, b.end):
            return self.before
        live = self.live  # a replay's: its read starts here
        if self.reading:
            return live  # empty: kept for nothing, the read is not in yet
        self.live.flush()
        first = min((s.t[0] for s in self.live.series.values() if s.t), default=None)
        path = self.session.path or self.session.source_path
        if self.transcript is None and (first is None or first > b.start + 1.0) \
                and path is not None:
            if self.session.writer is not None:
                self.session.writer.sync()  # what was written so far is on disk
            rec = load(path, windows=[(b.start, b.end)])
        else:
            rec = self.live
        self.before = _copy_window(rec, b.start, b.end)
        self._before_for = (b.start, b.end)
        return self.before

    def readings(self) -> Recording | None:
        """The marked baseline window's readings (None without a baseline):
        what the live triage compares the current phase with."""
        b = self.session.state.baseline
        return None if b is None else self._readings_of(b)

    def result(self) -> dict[str, Any] | None:
        """The baseline against the last 30 s (None without a baseline or
        readings), recomputed at most once a session second."""
        b = self.session.state.baseline
        if b is None:
            return None
        now = self.session.state.last_t
        key = (int(now), b)
        if self._cache is not None and self._cache[:2] == key:
            return self._cache[2]
        before = self._readings_of(b)
        after = Window(f"last {LIVE_S:.0f} s", max(0.0, now - LIVE_S), now)
        out = compare(Side(before, Window(b.label or "baseline", b.start, b.end)),
                      Side(self.live, after))
        found = out if out["metrics"] or out["profile"] is not None else None
        self._cache = (key[0], key[1], found)
        return found
