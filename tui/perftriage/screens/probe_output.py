"""The output of one probe: command, verdict, stdout, stderr and detail,
scrollable and selectable (a read-only TextArea), ``c`` copies it all.
Follows the probe while it is still queued or running."""

from __future__ import annotations

import json

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Footer, Label, TextArea

from perftriage.cockpit_app import cockpit_app
from perftriage.core.model.state import ProbeState, Section, SessionState
from perftriage.core.sanitize import visible_lines
from perftriage.screens.detail_modal import DetailModal
from perftriage.widgets.format import duration, safe


def probe_report(p: ProbeState) -> str:
    """Plain text of everything known about ``p`` (what ``c`` copies)."""
    head = [
        f"probe   {p.probe_id}{f'  (fan-out {p.group})' if p.group else ''}"
        f"{f'  template {p.template}' if p.template else ''}",
        f"host    {p.host}",
        f"kind    {p.kind} {' '.join(p.args)}",
        f"status  {p.status}"
        + (f"  exit {p.exit_status}" if p.exit_status is not None else "")
        + (f"  in {duration(p.duration_s)}" if p.duration_s is not None else ""),
        f"result  {p.summary}",
        "",
        "$ " + p.command,
        "",
        "--- stdout " + "-" * 40,
        p.stdout.rstrip("\n") or "(empty)",
        "",
        "--- stderr " + "-" * 40,
        p.stderr.rstrip("\n") or "(empty)",
    ]
    if p.detail:
        head += ["", "--- detail " + "-" * 40,
                 json.dumps(p.detail, indent=2, default=str, ensure_ascii=False)]
    return "\n".join(head) + "\n"


class ProbeOutputScreen(DetailModal):
    SECTIONS = frozenset({Section.PROBES})
    DEFAULT_CSS = """
    ProbeOutputScreen #probe-output-title { padding: 0 1; text-style: bold; }
    ProbeOutputScreen TextArea { height: 1fr; }
    """
    BINDINGS = [
        Binding("escape,q", "close", "Close", id="probe_output.close"),
        Binding("c", "copy", "Copy all", id="probe_output.copy"),
    ]

    def __init__(self, probe_id: str) -> None:
        super().__init__()
        self.probe_id = probe_id
        # what the text shows now: reloading it would drop the selection, so
        # it is reloaded only when this probe (not any probe) changed
        self._shown: tuple | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("", id="probe-output-title")
            yield TextArea("", read_only=True, show_line_numbers=False, soft_wrap=False,
                           id="probe-output-text")
            yield Footer()

    def on_mount(self) -> None:
        cockpit_app(self).refresher.watch(self)
        self.query_one(TextArea).focus()

    def show_state(self, state: SessionState) -> None:
        p = state.probes.get(self.probe_id)
        if p is None:
            return
        key = (p.status, len(p.stdout), len(p.stderr), p.summary)
        if key == self._shown:
            return
        self._shown = key
        self.query_one("#probe-output-title", Label).update(
            safe(f"{p.probe_id} · {p.host} · {p.label} · {p.status}")
        )
        area = self.query_one(TextArea)
        area.load_text(visible_lines(probe_report(p)))

    @property
    def text(self) -> str:
        return self.query_one(TextArea).text

    def action_copy(self) -> None:
        area = self.query_one(TextArea)
        self.app.copy_to_clipboard(area.selected_text or area.text)
        self.notify("probe output copied" if not area.selected_text else "selection copied")

    def action_close(self) -> None:
        self.dismiss(None)
