"""The one refresh path: state changes reach the screen at most once a frame.

Every event goes through ``Session.emit``; the :class:`Refresher` listens
there. The first event after a frame schedules one flush at the next frame
boundary; more events before it only find the flush already scheduled (a
flood of log batches costs one boolean test each). The flush compares
``state.versions`` with what was last shown and calls ``show_state`` on
every mounted view whose ``SECTIONS`` include a changed section. Views are
the panes and the detail screens: they register with :meth:`Refresher.watch`
when mounted and drop out when they are removed.

A 1 Hz tick marks :attr:`Section.CLOCK` for views that show ages and
running times; a theme change marks every section (table cells hold colours
baked from the theme). Nothing else re-renders: no view polls the state, and
no action refreshes after it emits.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, ClassVar, Protocol
from weakref import WeakSet

from textual.css.query import NoMatches

from perftriage.core.model.events import Event
from perftriage.core.model.state import Section, SessionState

if TYPE_CHECKING:  # pragma: no cover
    from textual.app import App

    from perftriage.services.investigation.session import Session

FRAME_S = 1 / 10  # at most ten re-renders a second, however fast events come
CLOCK_S = 1.0
ALL_SECTIONS = frozenset(Section)


class StateView(Protocol):
    """A pane or detail screen that renders part of the session state."""

    SECTIONS: ClassVar[frozenset[Section]]

    @property
    def is_attached(self) -> bool: ...

    def show_state(self, state: SessionState) -> None: ...


class Refresher:
    def __init__(self, app: App, session: Session, frame_s: float = FRAME_S) -> None:
        self._app = app
        self._session = session
        self._frame_s = frame_s
        self._views: WeakSet = WeakSet()
        self._shown: dict[Section, int] = dict(session.state.versions)
        self._marked: set[Section] = set()
        self._pending = False  # a flush is scheduled
        self._last_flush = 0.0
        self._unsubscribe: Callable[[], None] | None = None

    def start(self) -> None:
        """Listen to the session and start the clock tick (from ``App.on_mount``)."""
        self._unsubscribe = self._session.subscribe(self._on_event)
        self._app.set_interval(CLOCK_S, lambda: self.mark((Section.CLOCK,)))

    def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def watch(self, view: StateView) -> None:
        """Render ``view`` now and whenever one of its sections changes."""
        self._views.add(view)
        view.show_state(self._session.state)

    def _on_event(self, _event: Event) -> None:
        self._schedule()

    def mark(self, sections: Iterable[Section] = ALL_SECTIONS) -> None:
        """Re-render the views of ``sections`` at the next frame even though
        no event changed them (time passed, the theme changed)."""
        self._marked.update(sections)
        self._schedule()

    def _schedule(self) -> None:
        if self._pending:
            return
        self._pending = True
        delay = self._last_flush + self._frame_s - time.monotonic()
        if delay > 0:
            self._app.set_timer(delay, self.flush, name="refresh")
        else:  # (a zero-delay Textual timer divides by zero)
            self._app.call_later(self.flush)

    def flush(self) -> None:
        """Render what changed now (the scheduled frame calls this)."""
        self._pending = False
        self._last_flush = time.monotonic()
        state = self._session.state
        versions = state.versions
        changed = {s for s, v in versions.items() if self._shown.get(s) != v}
        changed |= self._marked
        self._marked.clear()
        if not changed:
            return
        self._shown = dict(versions)
        for view in list(self._views):
            if not view.is_attached:  # removed (a dismissed screen)
                self._views.discard(view)
            elif not changed.isdisjoint(view.SECTIONS):
                try:
                    view.show_state(state)
                except NoMatches:  # its children are not mounted yet: draw it next frame
                    self.mark(view.SECTIONS)
