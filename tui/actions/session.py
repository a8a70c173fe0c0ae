"""Session-wide keys: notes, quit."""

from __future__ import annotations

from textual.binding import Binding

from tui.actions.base import ActionsMixin
from tui.core import events as ev
from tui.screens.prompt import PromptScreen


class SessionActions(ActionsMixin):
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("N", "note", "Note", id="session.note"),
    ]

    def action_note(self) -> None:
        if self.refuse_in_replay():
            return

        def add(value: str | None) -> None:
            if value:
                self.session.emit(ev.NoteAdded(text=value))
                self.notify(f"note added: {value}")  # type: ignore[attr-defined]

        self.push_screen(  # type: ignore[attr-defined]
            PromptScreen("note", "note", placeholder="what just happened, e.g. restarting server"),
            add,
        )
