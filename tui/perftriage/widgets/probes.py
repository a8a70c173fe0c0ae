"""Probes pane: the queue, one row per probe, newest at the bottom.

A running probe shows its elapsed time; a fan-out (one probe on every
host, one ``group``) marks with ``≠`` the rows whose result differs from
the others once all of them have finished. Enter on a row opens its output.
"""

from __future__ import annotations

from collections import defaultdict

from rich.text import Text
from textual.widgets import DataTable

from perftriage.core import probes
from perftriage.core.model.state import ProbeState, SessionState
from perftriage.widgets.format import duration, safe_text
from perftriage.widgets.pane import Pane
from perftriage.widgets.status_style import STATUS_ICON, status_text

DIFF_MARK = "≠ "
LABEL_MAX = 30  # long module paths keep their end: that is the part that differs


def short_label(label: str, limit: int = LABEL_MAX) -> str:
    if len(label) <= limit:
        return label
    kind, _, rest = label.partition(" ")
    keep = max(limit - len(kind) - 2, 8)
    return f"{kind} …{rest[-keep:]}"


def differing_probes(state: SessionState) -> set[str]:
    """Probe ids whose fan-out siblings (all finished) got a different result."""
    groups: dict[str, list[ProbeState]] = defaultdict(list)
    for p in state.probes.values():
        if p.group:
            groups[p.group].append(p)
    out: set[str] = set()
    for members in groups.values():
        if len(members) < 2 or not all(m.finished for m in members):
            continue
        out |= probes.differing(
            [(m.probe_id, probes.compare_key(m.kind, m.status, m.summary, m.detail))
             for m in members]
        )
    return out


def probe_row(p: ProbeState, now_t: float, variables: dict[str, str],
              differs: bool = False) -> tuple:
    if p.status == "running" and p.started_t is not None:
        dur = duration(max(0.0, now_t - p.started_t)) + "…"
    else:
        dur = duration(p.duration_s)
    label = ("⇉ " if p.group else "") + short_label(p.label)
    if differs:
        result = status_text(variables, "timeout", DIFF_MARK + p.summary)
    else:
        result = safe_text(p.summary, no_wrap=True)
    return (
        p.probe_id,
        safe_text(p.host, no_wrap=True),
        status_text(variables, p.status, f"{STATUS_ICON.get(p.status, '')} {p.status}"),
        safe_text(label, no_wrap=True),
        dur,
        result,
    )


class ProbesPane(Pane):
    clock_driven = True
    section = "probes"

    def __init__(self, title: str, **kwargs) -> None:
        super().__init__(title, **kwargs)
        self._rows: dict[str, tuple] = {}  # what each row shows now (skip unchanged)

    def compose(self):
        table = DataTable(id="probes-table", cursor_type="row", zebra_stripes=True)
        for name in ("id", "host", "status", "probe", "time", "result"):
            table.add_column(name, key=name)
        yield table

    def on_mount(self) -> None:
        label = getattr(self.app, "probe_target_label", None)
        if label is not None:
            self.border_subtitle = label()

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

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        action = getattr(self.app, "action_probe_output", None)
        if action is not None:
            action(event.row_key.value)

    def _now(self, state: SessionState) -> float:
        session = getattr(self.app, "session", None)
        if session is not None and not session.replay:
            return session.elapsed
        return state.last_t

    def reset(self, state: SessionState) -> None:
        super().reset(state)
        self.table.clear()  # probes queued after the new moment must go
        self._rows.clear()

    def render_state(self, state: SessionState) -> None:
        table = self.table
        at_bottom = table.cursor_row >= table.row_count - 1
        now_t = self._now(state)
        differs = differing_probes(state)
        variables = self.app.theme_variables
        theme = self.app.theme
        for p in state.probes.values():
            diff = p.probe_id in differs
            key = (theme, p.status, p.summary, diff, p.duration_s,
                   round(now_t - p.started_t) if p.status == "running" and p.started_t else None)
            if self._rows.get(p.probe_id) == key:
                continue
            self._rows[p.probe_id] = key
            row = probe_row(p, now_t, variables, diff)
            if p.probe_id in table.rows:
                # id, host and probe never change: only status, time, result
                for col, value in zip(table.columns, row, strict=False):
                    if col.value in ("status", "time", "result"):
                        table.update_cell(p.probe_id, col, value, update_width=True)
            else:
                table.add_row(*row, key=p.probe_id)
        if at_bottom and table.row_count:
            table.move_cursor(row=table.row_count - 1)
