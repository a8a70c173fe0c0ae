"""One hypothesis in full: its note and each piece of evidence with its
result (a probe's verdict and summary as they are now)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from perftriage.core.report.markdown import STANCE_ICON, STATUS_ICON, clock, evidence_label, evidence_result
from perftriage.core.model.state import SessionState
from perftriage.core.sanitize import visible
from perftriage.widgets.status_style import STATUS_ICON as PROBE_ICON
from perftriage.widgets.status_style import status_text


class HypothesisDetailScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HypothesisDetailScreen { align: center middle; }
    HypothesisDetailScreen > Vertical {
        width: 90%; height: 80%; padding: 1 2;
        border: thick $accent; background: $surface;
    }
    HypothesisDetailScreen #hyp-detail-head { height: auto; }
    HypothesisDetailScreen #hyp-detail-evidence { height: 1fr; }
    HypothesisDetailScreen .help { color: $text-muted; }
    """
    BINDINGS = [
        Binding("escape", "close", "Close", id="hypothesis_detail.close"),
        Binding("u,delete", "unlink", "Unlink evidence", id="hypothesis_detail.unlink"),
    ]

    def __init__(self, state: SessionState, hyp_id: str) -> None:
        super().__init__()
        self.state = state
        self.hyp_id = hyp_id
        self._seen: tuple[int, int] = (-1, -1)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("", id="hyp-detail-head")
            table = DataTable(id="hyp-detail-evidence", cursor_type="row", zebra_stripes=True)
            table.add_columns("", "stance", "evidence", "linked", "result")
            yield table
            yield Label("u unlink the selected evidence · Esc close", classes="help")

    def on_mount(self) -> None:
        self.refresh_view()
        self.set_interval(0.25, self.refresh_view)
        self.query_one(DataTable).focus()

    def refresh_view(self, force: bool = False) -> None:
        seen = (self.state.versions.get("hypotheses", 0), self.state.versions.get("probes", 0))
        if seen == self._seen and not force:
            return
        self._seen = seen
        h = self.state.hypothesis(self.hyp_id)
        head = self.query_one("#hyp-detail-head", Static)
        table = self.query_one(DataTable)
        table.clear()
        if h is None:
            head.update("this hypothesis was deleted")
            return
        variables = self.app.theme_variables
        rank = self.state.hypotheses.index(h) + 1
        pro = sum(1 for e in h.evidence if e.stance == "for")
        title = Text.assemble(
            (f"#{rank} ", "bold"), (visible(h.title), "bold"), "  ",
            status_text(variables, h.status, f"{STATUS_ICON.get(h.status, '')} {h.status}"),
            f"\nevidence: {pro} for, {len(h.evidence) - pro} against",
            f" · created {clock(h.created_t)} · updated {clock(h.updated_t)}",
        )
        if h.note:
            title.append("\n" + visible(h.note, newlines=True))
        head.update(title)
        for i, e in enumerate(h.evidence):
            status, text = evidence_result(self.state, e)
            stance = status_text(variables, "supported" if e.stance == "for" else "refuted",
                                 f"{STANCE_ICON.get(e.stance, '')} {e.stance}")
            icon = PROBE_ICON.get(status, "")
            table.add_row(
                status_text(variables, status, icon) if icon else "",
                stance,
                evidence_label(e),
                clock(e.t),
                Text(visible(text)),
                key=f"{i}",
            )

    def action_unlink(self) -> None:
        h = self.state.hypothesis(self.hyp_id)
        table = self.query_one(DataTable)
        if h is None or table.row_count == 0:
            return
        e = h.evidence[table.cursor_row]
        self.app.unlink_evidence(self.hyp_id, e.ref_kind, e.ref_id)  # type: ignore[attr-defined]
        self.refresh_view(force=True)

    def action_close(self) -> None:
        self.dismiss(None)
