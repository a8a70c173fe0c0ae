"""Session-wide keys: notes, quit."""

from __future__ import annotations

from textual.binding import Binding

from perftriage.actions.base import ActionsMixin
from perftriage.core.model import events as ev
from perftriage.screens.prompt import PromptScreen


class SessionActions(ActionsMixin):
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("N", "note", "Note", id="session.note"),
        Binding("question_mark", "toggle_help", "Keys", id="app.help",
                tooltip="Show or hide every key of the focused pane and the app"),
    ]

    def action_toggle_help(self) -> None:
        if self.screen.query("HelpPanel"):  # type: ignore[attr-defined]
            self.action_hide_help_panel()  # type: ignore[attr-defined]
        else:
            self.action_show_help_panel()  # type: ignore[attr-defined]

    def action_note(self) -> None:
        if self.refuse_annotation():
            return

        def add(value: str | None) -> None:
            if value:
                self.session.emit(ev.NoteAdded(text=value))
                self.notify(f"note added: {value}")  # type: ignore[attr-defined]

        self.push_screen(  # type: ignore[attr-defined]
            PromptScreen("note", "note", placeholder="what just happened, e.g. restarting server"),
            add,
        )
