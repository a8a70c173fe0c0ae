"""One hypothesis in full: its note and each piece of evidence with its
result (a probe's verdict and summary as they are now). Enter on a piece
opens what it points at: a probe's output view, a host's detail view, a
log line in the Logs pane."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from perftriage.ui.app_context import app_context, refuse_in_replay
from perftriage.core.model import events as ev
from perftriage.core.clock import clock
from perftriage.core.view.hypothesis_text import HYPOTHESIS_ICON, STANCE_ICON, evidence_label, evidence_result
from perftriage.core.model.check_state import check_lines, verdict_cell
from perftriage.core.model.state import Section, SessionState
from perftriage.core.sanitize import visible
from perftriage.ui.screens.host_detail import HostDetailScreen
from perftriage.ui.screens.probe_output import ProbeOutputScreen
from perftriage.ui.widgets.logs import LogsPane
from perftriage.ui.widgets.status_style import PROBE_ICON
from perftriage.ui.widgets.status_style import status_text


class HypothesisDetailScreen(ModalScreen[None]):
    # evidence shows probe verdicts
    SECTIONS: ClassVar[frozenset[Section]] = frozenset({Section.HYPOTHESES, Section.PROBES})
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
        Binding("enter", "open", "Open", id="hypothesis_detail.open",
                tooltip="open the selected evidence: a probe's output, a host's detail, "
                        "a log line in the Logs pane"),
    ]

    def __init__(self, hyp_id: str) -> None:
        super().__init__()
        self.hyp_id = hyp_id

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("", id="hyp-detail-head")
            table: DataTable[str | Text] = DataTable(id="hyp-detail-evidence", cursor_type="row",
                                                     zebra_stripes=True)
            table.add_columns("", "stance", "evidence", "linked", "result")
            yield table
            yield Label("Enter opens the selected evidence (probe output, host detail, log line)"
                        " · u unlink it · Esc close", classes="help")

    def on_mount(self) -> None:
        app_context(self).refresher.watch(self)
        self.query_one(DataTable).focus()

    @property
    def state(self) -> SessionState:
        return app_context(self).session.state

    def show_state(self, state: SessionState) -> None:
        h = state.hypothesis(self.hyp_id)
        head = self.query_one("#hyp-detail-head", Static)
        table = self.query_one(DataTable)
        table.clear()
        if h is None:
            head.update("this hypothesis was deleted")
            return
        variables = self.app.theme_variables
        rank = state.hypotheses.index(h) + 1
        pro = sum(1 for e in h.evidence if e.stance == "for")
        title = Text.assemble(
            (f"#{rank} ", "bold"), (visible(h.title), "bold"), "  ",
            status_text(variables, h.status, f"{HYPOTHESIS_ICON.get(h.status, '')} {h.status}"),
            f"\nevidence: {pro} for, {len(h.evidence) - pro} against",
            f" · created {clock(h.created_t)} · updated {clock(h.updated_t)}",
        )
        if h.note:
            title.append("\n" + visible(h.note, newlines=True))
        if h.check:  # the check, its verdict per scope and its latest flips (remote text: filtered)
            lines = check_lines(h.check, h.for_s, h.verdicts, h.verdict_log, clock)
            cell = verdict_cell(h.verdicts)
            title.append("\n")
            title.append_text(status_text(variables, cell[1] if cell else "open",
                                          visible(lines[0])))
            title.append("".join("\n" + visible(line) for line in lines[1:]))
        head.update(title)
        for i, e in enumerate(h.evidence):
            status, text = evidence_result(state, e)
            stance = status_text(variables, "supported" if e.stance == "for" else "refuted",
                                 f"{STANCE_ICON.get(e.stance, '')} {e.stance}")
            icon = PROBE_ICON.get(status, "")
            table.add_row(
                status_text(variables, status, icon) if icon else "",
                stance,
                Text(visible(evidence_label(e))),  # a str cell is Rich markup
                clock(e.t),
                Text(visible(text)),
                key=f"{i}",
            )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()  # Enter on the table (DataTable consumes the key itself)
        self.action_open()

    def action_open(self) -> None:
        h = self.state.hypothesis(self.hyp_id)
        table = self.query_one(DataTable)
        if h is None or table.row_count == 0:
            return
        e = h.evidence[table.cursor_row]
        if e.ref_kind == "probe" and e.ref_id in self.state.probes:
            self.app.push_screen(ProbeOutputScreen(e.ref_id))
        elif e.ref_kind == "host" and (host := e.ref_id.rpartition(":")[0]) in self.state.hosts:
            self.app.push_screen(HostDetailScreen(host))
        elif e.ref_kind == "log":
            self._show_log_line(e.ref_id)
        elif e.ref_kind == "finding":
            self._show_finding(e.ref_id)
        elif e.ref_kind in ("probe", "host"):
            self.notify(f"{e.ref_kind} {e.ref_id} is not in this session", severity="warning")
        else:
            self.notify(visible(f"{e.ref_kind} {e.ref_id}: {e.summary}"), markup=False)

    def _show_finding(self, ref_id: str) -> None:
        """Close the details and open the Triage view on the finding
        (``HOST:CAUSE``), highlighted if the triage still has it."""
        from perftriage.ui.screens.triage import TriageScreen
        from perftriage.ui.screens.views import open_view

        host, _, cause = ref_id.rpartition(":")
        app = self.app
        self.dismiss(None)
        open_view(app, TriageScreen, lambda: TriageScreen(pick=(host, cause)))

    def _show_log_line(self, ref_id: str) -> None:
        """Close the details and put the Logs pane's cursor on the line
        (``SOURCE:N``, N counted from 1)."""
        source_id, _, number = ref_id.rpartition(":")
        pane = next((p for screen in reversed(self.app.screen_stack)
                     for p in screen.query(LogsPane)), None)
        if pane is None or not number.isdigit():
            self.notify(f"log {ref_id}: no Logs pane to show it in", severity="warning")
            return
        self.dismiss(None)
        if not pane.show_line(source_id, int(number) - 1):
            pane.notify(f"log {ref_id} is not shown: filtered out, or no longer in the ring",
                        severity="warning")

    def action_unlink(self) -> None:
        h = self.state.hypothesis(self.hyp_id)
        table = self.query_one(DataTable)
        if h is None or table.row_count == 0:
            return
        if refuse_in_replay(self, annotation=True):
            return
        e = h.evidence[table.cursor_row]
        app_context(self).session.emit(ev.EvidenceUnlinked(hyp_id=self.hyp_id, ref_kind=e.ref_kind,
                                             ref_id=e.ref_id))

    def action_close(self) -> None:
        self.dismiss(None)
