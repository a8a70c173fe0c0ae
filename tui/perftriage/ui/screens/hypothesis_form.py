"""Add / edit a hypothesis: title, free-text note and an optional check
(a condition over live signals, held ``for`` a while), keyboard only."""

from __future__ import annotations

from typing import NamedTuple

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from perftriage.core.checks.expr import CheckError
from perftriage.core.checks.verdicts import compile_scoped, for_seconds
from perftriage.core.sanitize import visible
from perftriage.ui.key_order_workaround import FormScreen
from perftriage.ui.widgets.editable_input import EditableInput
from perftriage.ui.widgets.format import markup


class HypothesisForm(NamedTuple):
    title: str
    note: str
    check: str = ""
    for_s: float = 0.0


class HypothesisFormScreen(FormScreen[HypothesisForm | None]):
    """Returns a :class:`HypothesisForm` or None when cancelled. Enter in the
    title moves to the note; Enter in the note, the check or its ``for`` (or
    ctrl+s anywhere) saves. A check that does not compile is not saved: the
    error says where (``column 19: unknown signal gap.trafic_ratio``). Keys
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

    def __init__(self, heading: str, title: str = "", note: str = "", check: str = "",
                 for_s: float = 0.0, scope: str = "") -> None:
        super().__init__()
        self.heading = heading
        self.initial = (title, note)
        self.initial_check = (check, f"{for_s:g}s" if for_s else "")
        self.scope = scope  # kept as it is (a pack's scope); the form does not edit it

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(markup("[b]$heading[/b]", heading=self.heading))
            yield Label("title", classes="help")
            yield EditableInput(value=self.initial[0], id="hyp-title",
                        placeholder="what might explain the gap, e.g. MoE runs on the slow path")
            yield Label("note", classes="help")
            yield EditableInput(value=self.initial[1], id="hyp-note",
                        placeholder="how to test it, what would refute it (optional)")
            yield Label("check (optional): true keeps it supported, e.g. "
                        "gap.idle_pct >= 30 and gap.traffic_ratio < 1.5", classes="help")
            yield EditableInput(value=self.initial_check[0], id="hyp-check",
                                placeholder="a condition over live signals (optional)")
            yield Label("for: how long it must hold, e.g. 10s (optional)", classes="help")
            yield EditableInput(value=self.initial_check[1], id="hyp-for", placeholder="0s")
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

    def _refuse(self, field: str, message: str) -> None:
        # text: the message quotes the check or the duration as typed
        self.query_one("#hyp-form-error", Label).update(Content(visible(message, newlines=True)))
        self.set_focus(self.query_one(f"#{field}", Input))  # now, before the next key

    def action_save(self) -> None:
        title = self.query_one("#hyp-title", Input).value.strip()
        note = self.query_one("#hyp-note", Input).value.strip()
        check_input = self.query_one("#hyp-check", Input)
        check = check_input.value.strip()
        if not title:
            self._refuse("hyp-title", "a hypothesis needs a title")
            return
        try:
            for_s = for_seconds(self.query_one("#hyp-for", Input).value.strip())
        except ValueError as exc:
            self._refuse("hyp-for", f"for: {exc}")
            return
        if check:
            try:
                compile_scoped(check, self.scope)
            except CheckError as exc:
                self._refuse("hyp-check", f"check: {exc}\n  {check}\n  {' ' * exc.pos}^")
                check_input.cursor_position = exc.pos
                return
        self.dismiss(HypothesisForm(title, note, check, for_s if check else 0.0))

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
