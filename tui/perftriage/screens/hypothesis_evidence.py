"""Pick a piece of evidence for a hypothesis: a finished probe, a notable or
throughput log line, a computed gap, or a note; attach it as for / against."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from perftriage.core.analysis import roofline
from perftriage.core.report.markdown import classify_log_line, clock, decode_throughput, probe_summary
from perftriage.core.model.events import RefKind, Stance
from perftriage.core.model.state import SessionState
from perftriage.core.sanitize import visible
from perftriage.widgets.status_style import PROBE_ICON, status_text

LOG_CANDIDATES = 200


@dataclass(frozen=True)
class Candidate:
    ref_kind: RefKind
    ref_id: str
    summary: str
    status: str = ""
    t: float | None = None


def candidates(state: SessionState) -> list[Candidate]:
    """Newest first within each kind: probes, gaps, log lines, notes."""
    out: list[Candidate] = []
    for p in reversed(list(state.probes.values())):
        if p.finished:
            out.append(Candidate("probe", p.probe_id, probe_summary(p), p.status, p.finished_t))
    for i, g in reversed(list(enumerate(state.gaps, 1))):
        out.append(Candidate("metric", f"gap{i}", roofline.summary_line(g), "", g.t))
    logs: list[Candidate] = []
    for sid, src in state.logs.items():
        first = src.total_lines - len(src.lines) + 1  # absolute number of the ring's first line
        for i, line in enumerate(src.lines):
            if classify_log_line(line) or decode_throughput(line):
                logs.append(Candidate("log", f"{sid}:{first + i}", line.strip()[:300]))
    out += reversed(logs[-LOG_CANDIDATES:])
    for i, n in reversed(list(enumerate(state.notes, 1))):
        out.append(Candidate("note", f"note{i}", n.text, "", n.t))
    return out


class EvidencePickerScreen(ModalScreen[tuple[Candidate, Stance] | None]):
    """Returns ``(candidate, stance)`` or None."""

    DEFAULT_CSS = """
    EvidencePickerScreen { align: center middle; }
    EvidencePickerScreen > Vertical {
        width: 90%; height: 80%; padding: 1 2;
        border: thick $accent; background: $surface;
    }
    EvidencePickerScreen DataTable { height: 1fr; }
    EvidencePickerScreen .help { color: $text-muted; }
    """
    BINDINGS = [
        Binding("plus", "pick('for')", "For", id="evidence_pick.for"),
        Binding("minus", "pick('against')", "Against", id="evidence_pick.against"),
        Binding("escape", "cancel", "Cancel", id="evidence_pick.cancel"),
    ]

    def __init__(self, state: SessionState, title: str) -> None:
        super().__init__()
        self.items = candidates(state)
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text.assemble(("evidence for: ", "bold"), visible(self.title_text)))
            table = DataTable(id="evidence-table", cursor_type="row", zebra_stripes=True)
            table.add_columns("", "kind", "ref", "time", "what")
            yield table
            yield Label("+ or Enter: supports · -: against · Esc cancel", classes="help")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        variables = self.app.theme_variables
        for i, c in enumerate(self.items):
            icon = PROBE_ICON.get(c.status, "")
            table.add_row(status_text(variables, c.status, icon) if icon else "", c.ref_kind,
                          c.ref_id, clock(c.t) if c.t is not None else "", Text(visible(c.summary)),
                          key=str(i))
        table.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_pick("for")

    def action_pick(self, stance: Stance) -> None:
        table = self.query_one(DataTable)
        if not self.items:
            self.notify("nothing to attach yet: run a probe or compute the gap", severity="warning")
            return
        self.dismiss((self.items[table.cursor_row], stance))

    def action_cancel(self) -> None:
        self.dismiss(None)
