"""Hypotheses pane: the running list in priority order, the latest gap to
the roofline, and the newest notes of the session timeline.

Keys that only make sense here are bindings of the pane (active while its
table has focus); they call the app's ``hyp_*`` actions
(``perftriage.actions.hypotheses``), so everything goes through ``Session.emit``.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable, Static

from perftriage.core.analysis import roofline
from perftriage.core.report.markdown import STATUS_ICON, clock
from perftriage.core.model.state import Hypothesis, SessionState
from perftriage.core.sanitize import visible
from perftriage.widgets.format import safe_text
from perftriage.widgets.pane import Pane
from perftriage.widgets.status_style import rich_colour, status_text

NOTES_SHOWN = 2
ICONS_SHOWN = 6


def evidence_cell(h: Hypothesis, variables: dict[str, str]) -> Text:
    """``3 ▲▲▼``: the count, then one verdict icon per piece (for / against)."""
    if not h.evidence:
        return Text("–", style=Style(color=rich_colour(variables, "$status-muted")))
    out = Text(f"{len(h.evidence)} ", no_wrap=True)
    for e in h.evidence[:ICONS_SHOWN]:
        if e.stance == "for":
            out.append_text(status_text(variables, "supported", "▲"))
        else:
            out.append_text(status_text(variables, "refuted", "▼"))
    if len(h.evidence) > ICONS_SHOWN:
        out.append("…")
    return out


class HypothesesPane(Pane):
    section = "hypotheses"
    SECTIONS = ("hypotheses", "notes", "gaps")
    DEFAULT_CSS = """
    HypothesesPane #hyp-table { height: 1fr; }
    HypothesesPane #hyp-gap { height: auto; padding: 0 1; }
    HypothesesPane #hyp-notes { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    """
    BINDINGS = [
        Binding("enter", "app.hyp_details", "Details", id="hypothesis.details"),
        Binding("e", "app.hyp_edit", "Edit", id="hypothesis.edit"),
        Binding("s", "app.hyp_status(1)", "Status", id="hypothesis.status_next"),
        Binding("plus", "app.hyp_attach('for')", "+Evidence", id="hypothesis.evidence_for"),
        Binding("minus", "app.hyp_attach('against')", "−Evidence", id="hypothesis.evidence_against"),
        Binding("E", "app.hyp_pick_evidence", "Evidence…", id="hypothesis.evidence_pick"),
        Binding("left_square_bracket,ctrl+up", "app.hyp_move(-1)", "Up",
                id="hypothesis.move_up"),
        Binding("right_square_bracket,ctrl+down", "app.hyp_move(1)", "Down",
                id="hypothesis.move_down"),
        Binding("delete,d", "app.hyp_delete", "Delete", id="hypothesis.delete"),
    ]

    def __init__(self, title: str, **kwargs) -> None:
        super().__init__(title, **kwargs)
        self._seen: tuple[int, ...] = ()

    def compose(self):
        table = DataTable(id="hyp-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("#", "status", "evidence", "hypothesis")
        yield table
        yield Static("", id="hyp-gap")
        yield Static("", id="hyp-notes")

    @property
    def table(self) -> DataTable:
        return self.query_one("#hyp-table", DataTable)

    @property
    def selected_hyp_id(self) -> str | None:
        table = self.table
        if table.row_count == 0:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return row_key.value

    def select(self, hyp_id: str) -> None:
        table = self.table
        if hyp_id in table.rows:
            table.move_cursor(row=table.get_row_index(hyp_id))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        # Enter on the table (DataTable consumes the key itself).
        event.stop()
        self.app.action_hyp_details()  # type: ignore[attr-defined]

    def sync(self, state: SessionState, force: bool = False) -> None:
        seen = tuple(state.versions.get(s, 0) for s in self.SECTIONS)
        if force or seen != self._seen:
            self._seen = seen
            self.render_state(state)

    def render_state(self, state: SessionState) -> None:
        variables = self.app.theme_variables
        table = self.table
        selected = self.selected_hyp_id
        table.clear()
        for i, h in enumerate(state.hypotheses, 1):
            title = safe_text(h.title, no_wrap=True)
            if h.note:
                title.append(f"  {visible(h.note)}", style=Style(color=rich_colour(variables, "$status-muted")))
            table.add_row(
                str(i),
                status_text(variables, h.status, f"{STATUS_ICON.get(h.status, '')} {h.status}"),
                evidence_cell(h, variables),
                title,
                key=h.hyp_id,
            )
        if selected is not None:
            self.select(selected)
        self._render_gap(state)
        self._render_notes(state)

    def _render_gap(self, state: SessionState) -> None:
        gap = self.query_one("#hyp-gap", Static)
        if not state.gaps:
            gap.update("[$text-muted]gap: none computed (G)[/]")
            return
        g = state.gaps[-1]
        status = "refuted" if g.gap is not None and g.gap > 2 else "supported"
        parts = [f"floor {g.floor_ms:.3g} ms/token"]
        if g.measured_ms is not None:
            parts += [f"measured {g.measured_ms:g} ms", f"gap {roofline.fmt_gap(g.gap)}"]
            if g.efficiency_pct is not None:
                parts.append(f"{g.efficiency_pct:.1f}% of bandwidth")
        else:
            parts.append(f"ceiling {g.ceiling_tps:.4g} tok/s")
        line = " · ".join(parts)
        gap.update(Text.assemble("gap: ", status_text(self.app.theme_variables, status, line)))

    def _render_notes(self, state: SessionState) -> None:
        notes = self.query_one("#hyp-notes", Static)
        shown = state.notes[-NOTES_SHOWN:]
        if not shown:
            notes.update("notes: none yet (N)")
            return
        lines = [f"✎ {clock(n.t)} {visible(n.text)}" + (f" ({visible(n.host)})" if n.host else "")
                 for n in shown]
        more = len(state.notes) - len(shown)
        if more:
            lines[0] = f"(+{more} earlier) " + lines[0]
        notes.update(Text("\n".join(lines), no_wrap=True, overflow="ellipsis"))
