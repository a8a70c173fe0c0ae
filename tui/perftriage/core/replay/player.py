"""A transcript player: position, play/pause, speed, idle limit, stepping,
markers and seeks over a :class:`~perftriage.core.replay.timeline.Timeline`.

Pure and clock-free: the caller passes the time to :meth:`Player.tick` (a
timer in the UI, a fake clock in tests), so nothing here sleeps. The state is
always exactly "the first ``position`` events through the one reducer":
stepping back restores the keyframe at or before the target and re-applies
forward, so back-then-forward gives the very same state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from perftriage.core.model import events as ev
from perftriage.core.model import reducer
from perftriage.core.model.state import SessionState
from perftriage.core.replay.timeline import Marker, Timeline, restore, snapshot

MIN_SPEED, MAX_SPEED = 0.25, 64.0
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
MAX_EVENTS_PER_TICK = 20_000  # a dense stretch at 64x never freezes a frame
SCAN_STEP = 20_000  # events indexed at a time when a seek needs more
FINE_SPACING = 1_024  # events between the snapshots a seek leaves behind it
RECENT_SNAPSHOTS = 8
TIME_SCAN_STEP = 2_048  # the same for a seek to a time (the first frame at --at T)


class Player:
    def __init__(
        self,
        timeline: Timeline,
        state: SessionState | None = None,
        *,
        speed: float = 1.0,
        idle_limit: float | None = None,
        on_apply: Callable[[ev.Event], None] | None = None,
        on_reset: Callable[[], None] | None = None,
    ) -> None:
        self.timeline = timeline
        self.state = state if state is not None else timeline.initial_state()
        if state is not None:
            restore(self.state, timeline.keyframes[0])
        self.position = 0  # events applied
        self.speed = clamp_speed(speed)
        self.idle_limit = idle_limit
        self.playing = False
        self.on_apply = on_apply
        self.on_reset = on_reset
        self._credit = 0.0  # replay seconds earned but not yet spent on events
        self._last_now: float | None = None
        self._ahead: Iterator[ev.Event] | None = None  # decoded events from position on
        # events added while replaying (notes, hypotheses), by the position
        # they were added at: applied right after that many original events
        self.overlay: dict[int, list[ev.Event]] = {}
        self._recent: dict[int, SessionState] = {}  # position -> snapshot, oldest first

    # --- where we are -----------------------------------------------------------

    @property
    def t(self) -> float:
        """Session time of the state: the time of the last applied event."""
        return self.timeline.times[self.position - 1] if self.position else 0.0

    @property
    def at_end(self) -> bool:
        return self.timeline.complete and self.position >= len(self.timeline)

    def _indexed(self, position: int) -> int:
        """Make sure ``position`` events are indexed (scan more if needed);
        returns the position clamped to what exists."""
        tl = self.timeline
        while len(tl) < position and not tl.complete:
            tl.scan(max_events=max(SCAN_STEP, position - len(tl)))
        return max(0, min(position, len(tl)))

    # --- moving -----------------------------------------------------------------

    def _apply(self, event: ev.Event) -> None:
        reducer.apply(self.state, event)
        self.position += 1
        if self.on_apply is not None:
            self.on_apply(event)
        self._apply_overlay(self.position)

    def _apply_overlay(self, position: int) -> None:
        for extra in self.overlay.get(position, ()):
            reducer.apply(self.state, extra)
            if self.on_apply is not None:
                self.on_apply(extra)

    def add(self, event: ev.Event) -> None:
        """An event made while replaying (a note, a hypothesis): applied now
        and, after any seek, again right after the original events before it."""
        self.overlay.setdefault(self.position, []).append(event)
        self._recent.clear()  # they were taken without it
        reducer.apply(self.state, event)
        if self.on_apply is not None:
            self.on_apply(event)

    def _advance(self, n: int) -> int:
        target = self._indexed(self.position + n)
        done = 0
        while self.position < target:
            if self._ahead is None:
                self._ahead = self.timeline.events_from(self.position)
            event = next(self._ahead, None)
            if event is None:  # cannot happen for an indexed position; be safe
                self._ahead = None
                break
            self._apply(event)
            done += 1
        return done

    def seek(self, position: int) -> None:
        """The state after exactly ``position`` events."""
        position = self._indexed(position)
        if position == self.position:
            return
        if position > self.position and position - self.position <= self.timeline.spacing:
            self._advance(position - self.position)
            return
        start, state, has_overlay = self._restore_point(position)
        restore(self.state, state)
        self.position = start
        self._ahead = None
        self._credit = 0.0
        if self.on_reset is not None:
            self.on_reset()
        if not has_overlay:
            self._apply_overlay(start)
        # on the way, keep a snapshot a little before the target: stepping
        # back one event at a time then replays at most FINE_SPACING events
        mark = (position - 1) // FINE_SPACING * FINE_SPACING
        if mark > start:
            self._advance(mark - start)
            self._recent[mark] = snapshot(self.state)
            while len(self._recent) > RECENT_SNAPSHOTS:
                del self._recent[next(iter(self._recent))]
        self._advance(position - self.position)

    def _restore_point(self, position: int) -> tuple[int, SessionState, bool]:
        """The nearest saved state at or before ``position``: a keyframe
        (original events only: at or before the first overlay the target
        includes, so overlays keep their order) or a recent snapshot taken
        by this player (overlays included)."""
        first_overlay = min((p for p in self.overlay if p <= position), default=position)
        kf_position, keyframe = self.timeline.keyframe_before(min(position, first_overlay))
        recent = max((p for p in self._recent if kf_position < p <= position), default=None)
        if recent is not None:
            return recent, self._recent[recent], True
        return kf_position, keyframe, False

    def seek_time(self, t: float) -> None:
        """Every event with a time <= ``t`` applied."""
        tl = self.timeline
        while not tl.complete and (not tl.times or tl.times[-1] <= t):
            tl.scan(max_events=TIME_SCAN_STEP)  # small steps: the first frame waits for no more
        self.seek(tl.index_at_time(t))

    def step(self, n: int = 1) -> None:
        """One event forward (n > 0) or back (n < 0)."""
        self.seek(self.position + n)

    def next_marker(self, kinds: frozenset[str] | None = None) -> Marker | None:
        tl = self.timeline
        while True:
            for m in tl.markers:
                if m.index >= self.position and (kinds is None or m.kind in kinds):
                    self.seek(m.index + 1)  # the state right after the marked event
                    return m
            if tl.complete:
                return None
            tl.scan(max_events=SCAN_STEP)

    def prev_marker(self, kinds: frozenset[str] | None = None) -> Marker | None:
        for m in reversed(self.timeline.markers):
            if m.index + 1 < self.position and (kinds is None or m.kind in kinds):
                self.seek(m.index + 1)
                return m
        return None

    # --- playing ----------------------------------------------------------------

    def play(self, now: float) -> None:
        if self.at_end:
            self.seek(0)
        self.playing = True
        self._last_now = now
        self._credit = 0.0

    def pause(self) -> None:
        self.playing = False
        self._last_now = None

    def toggle(self, now: float) -> None:
        self.pause() if self.playing else self.play(now)

    def set_speed(self, speed: float) -> None:
        self.speed = clamp_speed(speed)

    def faster(self) -> None:
        self.set_speed(next((s for s in SPEEDS if s > self.speed), MAX_SPEED))

    def slower(self) -> None:
        self.set_speed(next((s for s in reversed(SPEEDS) if s < self.speed), MIN_SPEED))

    def tick(self, now: float) -> int:
        """Advance by the replay time that passed since the last tick
        (``now`` from the caller's clock) times the speed; a quiet gap longer
        than the idle limit counts as the idle limit. Returns events applied."""
        if not self.playing or self._last_now is None:
            return 0
        self._credit += max(0.0, now - self._last_now) * self.speed
        self._last_now = now
        times = self.timeline.times
        applied = 0
        while applied < MAX_EVENTS_PER_TICK:
            if self.position >= len(self.timeline):
                self._indexed(self.position + 1)
                if self.position >= len(self.timeline):
                    self.pause()  # the end
                    break
            gap = max(0.0, times[self.position] - self.t)
            if self.idle_limit is not None:
                gap = min(gap, self.idle_limit)
            if self._credit < gap:
                break
            self._credit -= gap
            self._advance(1)
            applied += 1
        return applied


def clamp_speed(speed: float) -> float:
    return min(MAX_SPEED, max(MIN_SPEED, float(speed)))
