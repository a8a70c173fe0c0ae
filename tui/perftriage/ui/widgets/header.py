"""The cockpit header: title and session on the left, elapsed time on the right.

The elapsed time is redrawn every second *without* touching the title:
Textual's title widget re-lays out the whole screen on each update, which
would stall a log flood once a second.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Header
from textual.widgets._header import HeaderClock, HeaderIcon, HeaderTitle

from perftriage.ui.app_context import app_context
from perftriage.ui.widgets.format import duration


class ElapsedClock(HeaderClock):
    """Session time: the clock when live, the last event's time in a replay."""

    DEFAULT_CSS = """
    ElapsedClock { width: 12; }
    """

    def render(self):
        session = app_context(self).session
        elapsed = session.state.last_t if session.replay else session.elapsed
        return duration(elapsed)


class CockpitHeader(Header):
    def compose(self) -> ComposeResult:
        yield HeaderIcon().data_bind(Header.icon)
        yield HeaderTitle()
        yield ElapsedClock()
