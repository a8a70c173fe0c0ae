"""Watching an investigation that is still being recorded (``perftriage watch``).

A :class:`Watcher` is a :class:`~perftriage.services.investigation.replay.Replayer` whose
timeline follows the transcript as it grows, the way ``tail -F`` follows a
file: every tick it looks at the file's size (and its identity: a file
replaced under the same name is read again from its start), indexes what the
cockpit has appended since (a new run of the investigation is just more
events), and, while *live*, moves the player to the newest event. Any
scrubbing (a step, a marker, a seek, play/pause) leaves live; ``end`` goes
back to it.

Read-only by construction: the session takes no event at all (no note, no
hypothesis, nothing that would pretend to touch a host), the cockpit around
it has no hosts and never starts a source, and closing writes nothing (no
derived session).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from perftriage.core.model import events as ev
from perftriage.core.replay.player import Player
from perftriage.core.replay.timeline import Timeline
from perftriage.core.store import stream
from perftriage.core.store.transcript import TranscriptError
from perftriage.services.investigation.replay import Replayer, ReplaySession
from perftriage.services.investigation.session import WATCH

CHECK_INTERVAL_S = 0.2  # how often the file is looked at (an event shows within this)


class WatchSession(ReplaySession):
    """Nothing enters a watched session but what its transcript holds."""

    def __init__(self, watcher: Replayer) -> None:
        super().__init__(watcher, mode=WATCH)

    def emit(self, event: ev.Event, record: ev.Event | None = None) -> ev.Event:
        return event


class Watcher(Replayer):
    derives_triage = False  # the cockpit writing the file says its own triage
    def __init__(self, path: Path | str, *, clock: Callable[[], float] = time.monotonic,
                 on_reset: Callable[[], None] | None = None) -> None:
        super().__init__(path, clock=clock, on_reset=on_reset)
        self.timeline.follow = True
        self.session = WatchSession(self)
        self.session.state = self.player.state
        self.live = True
        self._identity = _identity(self.path)
        self._checked = 0.0
        self.reopened = 0  # times the file was replaced under its name
        self.waiting: str | None = None  # why what is shown is not the file now
        self._stale = False  # replaced or truncated, not read again yet

    # --- following the file ------------------------------------------------------------

    def check(self) -> bool:
        """Whether the file holds events not indexed yet (reopened first
        when it was replaced or truncated, as ``tail -F`` does). While the
        new file has no whole header line (truncated to 0 bytes, being
        written) or not a transcript's, the last state stays on screen and
        :attr:`waiting` says why."""
        identity = _identity(self.path)
        if identity is None:  # gone for a moment (rotated away): wait for it, as tail -F does
            self.waiting = "the transcript is gone: waiting for it to come back"
            return False
        if identity != self._identity or _size(self.path) < self.timeline._resume:
            self._stale = True  # (it may have grown past the old end by the next look)
        if self._stale:
            # replaced or truncated: read again from its start, once it has a header
            try:
                timeline = Timeline.open(self.path) if _header_written(self.path) else None
            except (TranscriptError, OSError) as exc:
                self.waiting = f"the transcript was replaced by what is no transcript ({exc})"
                return False
            if timeline is None:
                self.waiting = "the transcript was truncated: waiting for its header"
                return False
            self._reopen(identity, timeline)
            return True
        self.waiting = None
        return self.timeline.grow()

    def _reopen(self, identity: tuple[int, int], timeline: Timeline) -> None:
        self._stop.set()
        if self._indexer is not None:
            self._indexer.join(timeout=5)
            self._indexer = None
        self._stop.clear()
        self.waiting, self._stale = None, False
        self.timeline = timeline
        self.timeline.follow = True
        on_reset = self.player.on_reset
        self.player = Player(self.timeline, self.session.state, on_reset=on_reset)
        self._identity = identity
        self.reopened += 1
        if on_reset is not None:
            on_reset()

    def go_live(self) -> int:
        """Index what is new and show the newest event; returns events applied."""
        self.live = True
        self.player.pause()
        before = self.player.position
        self.timeline.scan()
        self.player.seek(len(self.timeline))
        return max(0, self.player.position - before)

    def leave_live(self) -> None:
        self.live = False

    def tick(self) -> int:
        now = self.clock()
        if now - self._checked >= CHECK_INTERVAL_S:
            self._checked = now
            grew = self.check()
            if self.live and (grew or self.player.position < len(self.timeline)):
                return self.go_live()
        if self.live:
            return 0
        return super().tick()  # playing back through what was recorded

    def write_derived(self) -> Path | None:
        return None  # a watcher never writes


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file now; None while it is missing (rotated away)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _header_written(path: Path) -> bool:
    """Whether the file's first line is whole (a writer may be mid-header),
    or too long to be a header (then opening it says so)."""
    first = stream.read_first_line(path)
    return first.endswith(b"\n") or len(first) > stream.MAX_HEADER_BYTES


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
