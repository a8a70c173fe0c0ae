"""Base class of the four cockpit panes: a titled box that declares the
state sections it shows and is re-rendered by the app's one refresh path
(:mod:`perftriage.ui.refresh`) when one of them changed."""

from __future__ import annotations

from typing import ClassVar

from textual.containers import Vertical

from perftriage.ui.app_context import AppContext, app_context, refuse_in_replay
from perftriage.core.model.state import Section, SessionState


class Pane(Vertical, can_focus=False):
    SECTIONS: ClassVar[frozenset[Section]] = frozenset()
    ALLOW_MAXIMIZE = True  # z zooms a pane to the whole screen
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

    @property
    def ctx(self) -> AppContext:
        return app_context(self)

    def on_mount(self) -> None:
        # Runs after the subclass's own on_mount (Textual walks the MRO).
        self.ctx.refresher.watch(self)

    def reset(self, state: SessionState) -> None:
        """The state went back in time (a replay seek): forget what was shown
        (the refresh path then renders every section again)."""

    def show_state(self, state: SessionState) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def name_shown(self) -> str:
        """The pane's name as its border shows it (the footer's and ``?``'s group)."""
        return str(self.border_title or type(self).__name__)

    def refuse_in_replay(self, *, annotation: bool = False) -> bool:
        """True (and a notice) when the key cannot act in this replay."""
        return refuse_in_replay(self, annotation=annotation)


def pane_of(node) -> Pane | None:
    """The pane ``node`` is in (itself if a pane), else None: its keys mean
    something only there."""
    while node is not None:
        if isinstance(node, Pane):
            return node
        node = node.parent
    return None
