"""Probes pane: the queue, one row per probe, newest at the bottom."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from tui.core.state import ProbeState, SessionState
from tui.widgets.format import duration
from tui.widgets.pane import Pane
from tui.widgets.status_style import STATUS_ICON, status_text


def probe_row(p: ProbeState, now_t: float, variables: dict[str, str]) -> tuple:
    if p.status == "running" and p.started_t is not None:
        dur = duration(max(0.0, now_t - p.started_t)) + "…"
    else:
        dur = duration(p.duration_s)
    return (
        p.probe_id,
        p.host,
        status_text(variables, p.status, f"{STATUS_ICON.get(p.status, '')} {p.status}"),
        Text(p.label, no_wrap=True),
        dur,
        Text(p.summary, no_wrap=True),
    )


class ProbesPane(Pane):
    clock_driven = True
    section = "probes"

    def compose(self):
        table = DataTable(id="probes-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("id", "host", "status", "probe", "time", "result")
        yield table

    @property
    def table(self) -> DataTable:
        return self.query_one("#probes-table", DataTable)

    @property
    def selected_probe_id(self) -> str | None:
        table = self.table
        if table.row_count == 0:
            return None
        row_key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return row_key.value

    def render_state(self, state: SessionState) -> None:
        table = self.table
        at_bottom = table.cursor_row >= table.row_count - 1
        for p in state.probes.values():
            row = probe_row(p, state.last_t, self.app.theme_variables)
            if p.probe_id in table.rows:
                for col, value in zip(table.columns, row, strict=False):
                    table.update_cell(p.probe_id, col, value)
            else:
                table.add_row(*row, key=p.probe_id)
        if at_bottom and table.row_count:
            table.move_cursor(row=table.row_count - 1)
