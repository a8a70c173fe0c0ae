"""Hypotheses pane: the running list, in priority order."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from tui.core.state import SessionState
from tui.widgets.pane import Pane
from tui.widgets.status_style import status_text


class HypothesesPane(Pane):
    section = "hypotheses"

    def compose(self):
        table = DataTable(id="hyp-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("#", "status", "hypothesis", "evidence")
        yield table

    def render_state(self, state: SessionState) -> None:
        table = self.query_one("#hyp-table", DataTable)
        table.clear()
        for i, h in enumerate(state.hypotheses, 1):
            pro = sum(1 for e in h.evidence if e.stance == "for")
            con = len(h.evidence) - pro
            table.add_row(
                str(i),
                status_text(self.app.theme_variables, h.status),
                Text(h.title),
                f"+{pro} -{con}",
                key=h.hyp_id,
            )
