"""Base class of the four cockpit panes: a titled box that re-renders
from :class:`~perftriage.core.model.state.SessionState` only when its section changed."""

from __future__ import annotations

from typing import ClassVar

from textual.containers import Vertical

from perftriage.core.model.state import SessionState


class Pane(Vertical, can_focus=False):
    section: ClassVar[str] = ""
    clock_driven: ClassVar[bool] = False  # re-rendered every second (ages, elapsed)
    DEFAULT_CSS = """
    Pane {
        border: round $pane-border;
        border-title-color: $text-muted;
        border-title-style: bold;
        height: 1fr;
        width: 1fr;
    }
    Pane:focus-within {
        border: round $pane-border-focus;
        border-title-color: $pane-border-focus;
    }
    """

    def __init__(self, title: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.border_title = title
        self._seen_version = -1

    def sync(self, state: SessionState, force: bool = False) -> None:
        version = state.versions.get(self.section, 0)
        if force or version != self._seen_version:
            self._seen_version = version
            self.render_state(state)

    def reset(self, state: SessionState) -> None:
        """The state went back in time (a replay seek): forget what was shown."""
        self._seen_version = -1

    def render_state(self, state: SessionState) -> None:  # pragma: no cover - abstract
        raise NotImplementedError
