"""One fan-out's answers folded by node set, like ClusterShell's clubak:
64 hosts that said the same thing are one row ``node[01-64] (64)``, the odd
ones stand out below (core/fleet/fold.py). Follows the fan-out while its
probes still run; the selected answer's output shows underneath."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Label, TextArea

from perftriage.ui.app_context import app_context
from perftriage.core.fleet.fold import group_answers
from perftriage.core.model.state import Section, SessionState
from perftriage.core.sanitize import visible, visible_lines
from perftriage.ui.screens.detail_modal import DetailModal
from perftriage.ui.widgets.footer import FittingFooter
from perftriage.ui.widgets.row_table import fill


VERDICT_STYLE = {"ok": "green", "failed": "red", "error": "bold red", "timeout": "red"}


class FanoutScreen(DetailModal):
    DEFAULT_CSS = """
    FanoutScreen #fanout-groups { height: auto; max-height: 50%; }
    FanoutScreen TextArea { height: 1fr; }
    """
    SECTIONS: ClassVar[frozenset[Section]] = frozenset({Section.PROBES})
    BINDINGS = [Binding("escape,q", "close", "Close", id="fanout.close")]

    def __init__(self, group: str) -> None:
        super().__init__()
        self.group = group
        self._shown: tuple | None = None  # the probes' (id, status) on screen
        self._groups: list = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("", id="fanout-title", classes="detail-title")
            yield DataTable(id="fanout-groups", cursor_type="row")
            yield TextArea("", read_only=True, show_line_numbers=False, soft_wrap=False,
                           id="fanout-output")
            yield FittingFooter()

    def on_mount(self) -> None:
        self.query_one(DataTable).add_columns("hosts", "n", "verdict", "result")
        app_context(self).refresher.watch(self)
        self.query_one(DataTable).focus()

    def probes(self) -> list:
        return [p for p in app_context(self).session.state.probes.values() if p.group == self.group]

    def show_state(self, state: SessionState) -> None:
        probes = [p for p in state.probes.values() if p.group == self.group]
        key = tuple((p.probe_id, p.status) for p in probes)
        if key == self._shown:  # another probe changed, not this fan-out
            return
        self._shown = key
        done = [p for p in probes if p.finished]
        self._groups = group_answers(done)
        first = probes[0] if probes else None
        what = f"{first.kind} {' '.join(first.args)}" if first else self.group
        self.query_one("#fanout-title", Label).update(Text(
            f"fan-out {self.group} · {visible(what)} · {len(done)}/{len(probes)} answered · "
            f"{len(self._groups)} distinct answer(s)"))
        table = self.query_one(DataTable)
        row = table.cursor_row
        table.clear()
        fill(table, [(Text(g.nodeset), str(len(g.hosts)),
                      Text(g.verdict, style=VERDICT_STYLE.get(g.verdict, "yellow")),
                      Text(visible(g.summary))) for g in self._groups])
        if self._groups:
            table.move_cursor(row=min(row, len(self._groups) - 1), animate=False)
        self._show_selected()

    def on_data_table_row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self._show_selected()

    def _show_selected(self) -> None:
        table = self.query_one(DataTable)
        area = self.query_one(TextArea)
        if not self._groups:
            area.load_text("(no answer yet)")
            return
        g = self._groups[min(table.cursor_row, len(self._groups) - 1)]
        text = (f"{g.nodeset} ({len(g.hosts)})  {g.verdict}"
                + (f"  exit {g.exit_status}" if g.exit_status is not None else "")
                + f"\n\n--- stdout {'-' * 40}\n{g.stdout.rstrip() or '(empty)'}"
                + f"\n\n--- stderr {'-' * 40}\n{g.stderr.rstrip() or '(empty)'}\n")
        area.load_text(visible_lines(text))

    def action_close(self) -> None:
        self.dismiss(None)
