"""Add / edit a hypothesis: title and free-text note, keyboard only."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from perftriage.screens.ordered_keys import EditableInput, FormScreen


class HypothesisFormScreen(FormScreen[tuple[str, str] | None]):
    """Returns ``(title, note)`` or None when cancelled. Enter in the title
    moves to the note; Enter in the note (or ctrl+s anywhere) saves. Keys
    typed fast (Tab, then the note) land in the field they were typed for."""

    FIRST_FOCUS = "#hyp-title"

    DEFAULT_CSS = """
    HypothesisFormScreen { align: center middle; }
    HypothesisFormScreen > Vertical {
        width: 90; height: auto; padding: 1 2;
        border: thick $accent; background: $surface;
    }
    HypothesisFormScreen #hyp-form-error { color: $error; height: auto; }
    HypothesisFormScreen .help { color: $text-muted; }
    """
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="hypothesis_form.cancel"),
        Binding("ctrl+s", "save", "Save", id="hypothesis_form.save"),
    ]

    def __init__(self, heading: str, title: str = "", note: str = "") -> None:
        super().__init__()
        self.heading = heading
        self.initial = (title, note)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"[b]{self.heading}[/b]")
            yield Label("title", classes="help")
            yield EditableInput(value=self.initial[0], id="hyp-title",
                        placeholder="what might explain the gap, e.g. MoE runs on the slow path")
            yield Label("note", classes="help")
            yield EditableInput(value=self.initial[1], id="hyp-note",
                        placeholder="how to test it, what would refute it (optional)")
            yield Label("", id="hyp-form-error")
            yield Label("Enter next/save · Tab switch field · ctrl+s save · ctrl+z undo · "
                        "Esc cancel",
                        classes="help")

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#hyp-form-error", Label).update("")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "hyp-title" and event.value.strip():
            # now, not deferred: the keys typed behind this Enter are the note's
            self.set_focus(self.query_one("#hyp-note", Input))
            return
        self.action_save()

    def action_save(self) -> None:
        title = self.query_one("#hyp-title", Input).value.strip()
        note = self.query_one("#hyp-note", Input).value.strip()
        if not title:
            self.query_one("#hyp-form-error", Label).update("a hypothesis needs a title")
            self.set_focus(self.query_one("#hyp-title", Input))
            return
        self.dismiss((title, note))

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """y / Enter confirms, n / Esc declines."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical {
        width: 70; height: auto; padding: 1 2;
        border: thick $warning; background: $surface;
    }
    ConfirmScreen .help { color: $text-muted; }
    """
    BINDINGS = [
        Binding("y,enter", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question, markup=False)
            yield Label("y/Enter yes · n/Esc no", classes="help")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
