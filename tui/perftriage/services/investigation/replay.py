"""A saved session as a player: what ``perftriage replay`` runs under the UI.

:class:`Replayer` ties the pieces together without Textual: the
:class:`~perftriage.core.replay.timeline.Timeline` (indexed by a background
thread so the first frame never waits for it), the clock-free
:class:`~perftriage.core.replay.player.Player` driven by an injectable clock,
and a :class:`ReplaySession` whose ``state`` the player moves.

A transcript made before the live triage (no ``triage.updated`` in it)
shows the recording's triage instead (:meth:`Replayer.settle`): per host,
the phase holding the player's time, the one ``replay --at T --json`` and
``perftriage triage`` name, hosts of one machine grouped the same way.

Notes and hypotheses added while replaying never touch the original file:
they join the player's overlay (so they stay where they were made when you
seek) and, at :meth:`Replayer.close`, a *derived* session is written next to
the others — the original events with the additions at the moments they
were made, and a header naming the original.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from perftriage.core.compare.load import load
from perftriage.core.model import events as ev
from perftriage.core.model import reducer
from perftriage.core.replay.player import Player
from perftriage.core.replay.timeline import Marker, Timeline
from perftriage.core.store import stream, transcript
from perftriage.core.triage.at import as_told, phase_at, told_in
from perftriage.core.triage.phase import Phase
from perftriage.core.triage.phases import triage
from perftriage.services.investigation.session import REPLAY, Session, SessionMode, session_filename
from perftriage.services.investigation.whole_read import read_whole

INDEX_STEP = 20_000  # events indexed per lock hold: a seek never waits longer
# what a person may add while replaying (anything else would pretend to touch a host)
ANNOTATIONS = (ev.NoteAdded, ev.HypothesisAdded, ev.HypothesisUpdated, ev.HypothesisDeleted,
               ev.EvidenceLinked, ev.EvidenceUnlinked, ev.GapComputed)


def derivation(header: dict) -> int:
    """How many replays with additions lie behind a transcript: 0 for a live
    session (older derived files say only ``derived_from``: 1)."""
    n = header.get("derivation")
    if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
        return n
    return 1 if header.get("derived_from") else 0


def replay_mark(generation: int) -> str:
    """The id prefix of additions made in a replay: ``r`` (rh1, rn1, ...) on a
    live session's transcript, ``r2`` on a derived one, and so on."""
    return "r" if generation <= 1 else f"r{generation}"


class ReplaySession(Session):
    """The session panes read while replaying. ``emit`` takes annotations
    only (stamped with the replay time) and hands them to the player."""

    def __init__(self, replayer: "Replayer", mode: SessionMode = REPLAY) -> None:
        tl = replayer.timeline
        super().__init__(name=tl.name, state=tl.initial_state(), mode=mode)
        self.replayer = replayer
        self.source_path = tl.path

    @property
    def elapsed(self) -> float:
        return self.replayer.player.t

    @property
    def unreadable(self) -> int:
        """The lines read so far that did not decode (a watched file's torn
        last line is one still being written: not counted)."""
        return sum(1 for p in self.replayer.timeline.problems if not p.torn_tail)

    def new_id(self, prefix: str) -> str:
        # never an id the replayed file uses, later on included: its own
        # replay additions (a derived session) carry the previous generation's mark
        return super().new_id(replay_mark(derivation(self.replayer.timeline.header) + 1) + prefix)

    def emit(self, event: ev.Event, record: ev.Event | None = None) -> ev.Event:
        if not isinstance(event, ANNOTATIONS):
            return event  # nothing live happens in a replay
        event.t = round(self.replayer.player.t, 6)
        event.wall = round(time.time(), 6)
        self.replayer.player.add(event)
        for listener in tuple(self._listeners):
            listener(event)
        return event

    def close(self, reason: str = "quit") -> None:
        self.replayer.close()


class Replayer:
    # the recording's triage where the transcript has none (a watched file's
    # cockpit writes its own as it goes)
    derives_triage = True

    def __init__(
        self,
        path: Path | str,
        *,
        sessions_dir: Path | None = None,
        speed: float = 1.0,
        idle_limit: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_reset: Callable[[], None] | None = None,
    ) -> None:
        self.timeline = Timeline.open(path)
        self.sessions_dir = sessions_dir
        self.clock = clock
        self.session = ReplaySession(self)
        self.player = Player(self.timeline, self.session.state, speed=speed,
                             idle_limit=idle_limit, on_reset=on_reset)
        self.derived_path: Path | None = None
        # the timeline bar spans the whole session from the first frame on
        self.expected_duration = stream.read_tail(self.timeline.path).duration_s
        self._stop = threading.Event()
        self._indexer: threading.Thread | None = None
        self._closed = False
        self._derived: list[Phase] | None = None  # the recording's triage, once read
        self._deriving = False
        self._told: dict[int, ev.TriageUpdated] = {}  # id(phase) -> as the state holds it
        self._marked = False  # the derived triage's markers are on the timeline

    @property
    def path(self) -> Path:
        return self.timeline.path

    # --- indexing in the background -------------------------------------------------

    def start_indexing(self) -> None:
        """Index the whole file in a thread (a slice at a time, so a seek from
        the UI thread, which takes the same lock, waits at most one slice)."""
        if self._indexer is not None or self.timeline.complete:
            return

        def run() -> None:
            while not self._stop.is_set() and not self.timeline.scan(max_events=INDEX_STEP):
                time.sleep(0)  # let the UI thread have the GIL between slices

        self._indexer = threading.Thread(target=run, name="replay-indexer", daemon=True)
        self._indexer.start()

    def wait_indexed(self, timeout: float | None = None) -> bool:
        if self._indexer is not None:
            self._indexer.join(timeout)
        return self.timeline.complete

    # --- playing ------------------------------------------------------------------------

    def tick(self) -> int:
        """Events applied (and 1 when :meth:`settle` changed the triage)."""
        return self.player.tick(self.clock()) + int(self.settle())

    # --- the recording's triage, for a transcript without one ---------------------------

    def settle(self) -> bool:
        """For a transcript with no ``triage.updated`` (made before the live
        triage): each host's phase of the recording's triage that holds the
        player's time, applied to the state through the reducer as the
        cockpit would have said it (never written: a derived session holds
        the original events and the additions only). Called after every
        move; True when the state's triage changed."""
        phases = self._derived_phases()
        if not phases:
            return False
        if not self._marked:
            self._marked = True
            self._mark(phases)
        state, t, changed = self.player.state, self.player.t, False
        for host in dict.fromkeys(p.host for p in phases):
            p = phase_at(phases, host, t)
            if p is None:
                continue
            told = self._told.get(id(p))
            if told is None:
                told = self._told[id(p)] = as_told(p)
            if state.triage.get(host) is not told:  # (a seek restores a copy)
                reducer.apply(state, told)
                changed = True
        return changed

    def _mark(self, phases: list[Phase]) -> None:
        """A marker where a host's top cause changes from one phase to the
        next (as the live triage's ``triage.updated`` make them), on the
        first event after the phase's start: the marker's state is the phase's."""
        tl, last = self.timeline, dict[str, str]()
        for p in phases:
            cause = p.top.cause if p.top is not None else ""
            index = tl.index_at_time(p.start)
            if last.get(p.host) == cause or index >= len(tl):
                continue
            last[p.host] = cause
            tl.markers.append(Marker(index, tl.times[index], "triage",
                                     f"{p.host}: {cause or 'nothing found'}"))
        tl.markers.sort(key=lambda m: m.index)

    def _derived_phases(self) -> list[Phase] | None:
        if self._derived is not None or not self.derives_triage or not self.timeline.complete:
            return self._derived
        if not self._deriving:  # a large file: read in a thread, nothing until then
            self._deriving = True
            read_whole(self.path, self._derive, "replay-triage")
        return self._derived

    def _derive(self) -> None:
        try:  # the cockpit's own triage in the file: it is what is shown (told_in)
            phases = [] if told_in(self.path) else triage(load(self.path))
        except (transcript.TranscriptError, OSError):  # gone or replaced since it was read
            phases = []
        self._derived = phases  # one assignment: the UI sees all of it or none

    def toggle(self) -> None:
        self.player.toggle(self.clock())

    # --- the derived session --------------------------------------------------------------

    @property
    def annotated(self) -> bool:
        return any(self.player.overlay.values())

    def write_derived(self) -> Path | None:
        """Write the original events with the additions at the positions they
        were made, to a new file in the sessions dir (next to the original
        when there is none). None when nothing was added."""
        if not self.annotated:
            return None
        overlay = self.player.overlay
        directory = self.sessions_dir or self.path.parent
        name = f"{self.timeline.name}-annotated"
        target = directory / session_filename(name, datetime.now(timezone.utc))
        n = 1
        while target.exists():
            n += 1
            target = directory / session_filename(f"{name}-{n}", datetime.now(timezone.utc))
        header = dict(self.timeline.header)
        header.update(name=name, derived_from=self.path.name,
                      derivation=derivation(self.timeline.header) + 1)
        writer = transcript.TranscriptWriter(target, header, background=False)
        try:
            for extra in overlay.get(0, ()):
                writer.write(extra)
            for position, (_, event) in enumerate(
                    stream.iter_events(self.path, self.timeline.first_offset), start=1):
                writer.write(event)
                for extra in overlay.get(position, ()):
                    writer.write(extra)
        finally:
            writer.close()
        self.derived_path = target
        return target

    def close(self) -> Path | None:
        """Stop indexing; write the derived session if anything was added."""
        if self._closed:
            return self.derived_path
        self._closed = True
        self._stop.set()
        if self._indexer is not None:
            self._indexer.join(timeout=5)
        return self.write_derived()
