"""A small modal form: one line of arguments, inline validation, history,
and optionally a choice (e.g. which host a probe runs on)."""

from __future__ import annotations

import shlex
from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Input, Label, Select

from perftriage.core.sanitize import visible
from perftriage.ui.key_order_workaround import FormScreen
from perftriage.ui.widgets.editable_input import EditableInput
from perftriage.ui.widgets.format import markup

# Recent arguments per prompt kind, newest last (kept for the app's lifetime).
HISTORY: dict[str, list[str]] = {}


class PromptScreen(FormScreen[str | None]):
    """Ask for one line. ``validate`` returns an error message or None.
    Up/Down walk the history of earlier answers for the same ``kind``.
    The line is focused when the form opens (never the host choice), and
    keys typed meanwhile land in it, in order (:class:`FormScreen`)."""

    FIRST_FOCUS = "#prompt-input"

    DEFAULT_CSS = """
    PromptScreen { align: center middle; }
    PromptScreen > Vertical {
        width: 80; height: auto; padding: 1 2;
        border: thick $accent; background: $surface;
    }
    PromptScreen #prompt-error { color: $error; height: auto; }
    PromptScreen #prompt-help, PromptScreen .prompt-keys { color: $text-muted; }
    PromptScreen #prompt-choice { width: 1fr; margin-bottom: 1; }
    """
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="prompt.cancel"),
        Binding("up", "history(-1)", "Older", show=False, id="prompt.history_older"),
        Binding("down", "history(1)", "Newer", show=False, id="prompt.history_newer"),
    ]

    def __init__(
        self,
        title: str,
        kind: str,
        *,
        placeholder: str = "",
        help: str | Text = "",  # text, never markup: it names hosts, servers, a baseline
        value: str = "",
        validate: Callable[[str], str | None] | None = None,
        choices: list[tuple[str, str]] | None = None,
        choice: str | None = None,
        choice_label: str = "",
        allow_empty: bool = False,
    ) -> None:
        super().__init__()
        self.allow_empty = allow_empty  # an empty answer is one (a probe that needs no argument)
        self.title_text = title
        self.kind = kind
        self.placeholder = placeholder
        self.help_text = help
        self.initial = value
        self.validator = validate
        self._hist_pos = len(HISTORY.get(kind, []))
        # (label, value) options shown in a Select above the input; the
        # chosen value is read from ``self.choice`` after dismissal.
        self.choices = choices
        self.choice = choice if choice is not None else (choices[0][1] if choices else None)
        self.choice_label = choice_label

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(markup("[b]$title[/b]", title=self.title_text))
            if self.choices:
                # Text labels: a str option is read as markup, and the options name hosts
                options = [(Text(visible(label)), value) for label, value in self.choices]
                yield Select(options, value=self.choice, allow_blank=False,
                             prompt=self.choice_label, id="prompt-choice")
            yield EditableInput(value=self.initial, placeholder=self.placeholder,
                                id="prompt-input")
            yield Label("", id="prompt-error")
            # the keys on a line of their own: appended to a long help they were cut
            help_text = self.help_text
            yield Label(Content(visible(help_text, newlines=True))
                        if isinstance(help_text, str) else help_text, id="prompt-help")
            yield Label("Enter run · Esc cancel · ↑↓ history · ctrl+z undo", classes="prompt-keys")

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.value is not Select.BLANK:
            self.choice = str(event.value)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#prompt-error", Label).update("")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        error = "enter a value" if not value and not self.allow_empty else None
        if error is None and self.validator is not None:
            error = self.validator(value)
        if error:
            # text: a validator's message may quote what was typed, or a host's name
            self.query_one("#prompt-error", Label).update(Content(visible(error, newlines=True)))
            return
        hist = HISTORY.setdefault(self.kind, [])
        if value in hist:
            hist.remove(value)
        hist.append(value)
        del hist[:-50]
        self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_history(self, step: int) -> None:
        hist = HISTORY.get(self.kind, [])
        if not hist:
            return
        self._hist_pos = min(max(self._hist_pos + step, 0), len(hist))
        value = hist[self._hist_pos] if self._hist_pos < len(hist) else ""
        inp = self.query_one("#prompt-input", Input)
        inp.value = value
        inp.cursor_position = len(value)


def split_args(value: str) -> list[str]:
    """Split a prompt answer like a shell would (quotes group words)."""
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise ValueError(f"cannot split arguments: {exc}") from None
