"""The output of one probe, opened on its result: verdict and summary, what
backs it (matches, the exception), then stdout, stderr, detail and the
command with its generated helper script folded (``s`` shows it).
Scrollable and selectable (a read-only TextArea); ``c`` copies it — and
says "copied" only when a clipboard took it. Follows the probe while it is
still queued or running. ``W`` wraps long lines (kept for this view while
the app runs, apart from the Logs pane's choice)."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Footer, Label, TextArea

from perftriage.ui.app_context import app_context
from perftriage.core.model.state import ProbeState, Section, SessionState
from perftriage.core.sanitize import visible, visible_lines
from perftriage.core.view.probe_text import probe_text
from perftriage.ui.screens.clipboard import copy_text
from perftriage.ui.screens.detail_modal import DetailModal


def probe_report(p: ProbeState) -> str:
    """Plain text of everything known about ``p``, result first (what ``c`` copies)."""
    return probe_text(p)


class ProbeOutputScreen(DetailModal):
    SECTIONS: ClassVar[frozenset[Section]] = frozenset({Section.PROBES})
    DEFAULT_CSS = """
    ProbeOutputScreen #probe-output-title { padding: 0 1; text-style: bold; }
    ProbeOutputScreen TextArea { height: 1fr; }
    """
    BINDINGS = [
        Binding("escape,q", "close", "Close", id="probe_output.close"),
        Binding("c", "copy", "Copy all", id="probe_output.copy"),
        Binding("s", "script", "Script", id="probe_output.script",
                tooltip="show or fold the helper script perftriage generated for the probe"),
        Binding("W", "toggle_wrap", "Wrap", id="probe_output.wrap",
                tooltip="wrap long lines, or cut them (left/right scroll); kept for this view"),
    ]

    def __init__(self, probe_id: str) -> None:
        super().__init__()
        self.probe_id = probe_id
        # what the text shows now: reloading it would drop the selection, so
        # it is reloaded only when this probe (not any probe) changed
        self._shown: tuple | None = None
        self.show_script = False

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("", id="probe-output-title")
            yield TextArea("", read_only=True, show_line_numbers=False, soft_wrap=False,
                           id="probe-output-text")
            yield Footer()

    def on_mount(self) -> None:
        app_context(self).refresher.watch(self)
        area = self.query_one(TextArea)
        area.soft_wrap = app_context(self).view_prefs.wrap.get("probe_output", False)
        area.focus()

    def show_state(self, state: SessionState) -> None:
        p = state.probes.get(self.probe_id)
        if p is None:
            return
        key = (p.status, len(p.stdout), len(p.stderr), p.summary, self.show_script)
        if key == self._shown:
            return
        self._shown = key
        # the host and the probe's label (its args) as text: Content, not markup
        self.query_one("#probe-output-title", Label).update(
            Content(visible(f"{p.probe_id} · {p.host} · {p.label} · {p.status}"))
        )
        area = self.query_one(TextArea)
        area.load_text(visible_lines(probe_text(p, expanded=self.show_script)))

    @property
    def text(self) -> str:
        return self.query_one(TextArea).text

    def action_script(self) -> None:
        self.show_script = not self.show_script
        self.show_state(app_context(self).session.state)

    def action_toggle_wrap(self) -> None:
        area = self.query_one(TextArea)
        area.soft_wrap = not area.soft_wrap
        app_context(self).view_prefs.wrap["probe_output"] = area.soft_wrap

    def action_copy(self) -> None:
        area = self.query_one(TextArea)
        what = "selection" if area.selected_text else "probe output"
        message, severity = copy_text(self.app, area.selected_text or area.text, what)
        self.notify(message, severity=severity)

    def action_close(self) -> None:
        self.dismiss(None)
