"""The Fleet view: hundreds of hosts from Prometheus, the odd ones first.

Top: the source, its state, host and GPU counts and how long the last
refresh took; the fleet median of every metric, the most deviating metric
first. Left: hosts x GPUs of one metric (``m`` / ``M`` cycle), hosts sorted
by their worst robust distance, outlier cells red (the first 100 rows; the
rest are counted on one line). Right: the outliers
across all metrics, ranked (``node117 GPU3 DRAM active 0.31 vs fleet median
0.56``). Bottom: the hosts with and without outliers, folded into node sets.

``enter`` on a host row or an outlier digs in: the host joins the cockpit
as an SSH host (services/hosts/dig_in.py) and the view closes on it. In a replay
(no Prometheus) the view shows what the transcript recorded: medians and
the top outliers.
"""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Static
from textual.worker import Worker

from perftriage.ui.app_context import app_context
from perftriage.core.fleet.nodeset import fold
from perftriage.core.fleet.model import FleetSnapshot, FleetSummary, Outlier, metric_label
from perftriage.core.model.state import Section, SessionState
from perftriage.core.sanitize import visible
from perftriage.core.view import fleet_view
from perftriage.services.hosts.dig_in import DigInError
from perftriage.ui.widgets.format import sparkline
from perftriage.ui.widgets.footer import FittingFooter
from perftriage.ui.widgets.row_table import fill

MAX_OUTLIER_ROWS = 200
# Grid rows drawn: the most deviating hosts. Nobody reads row 400 of 512;
# the rest are in the folded node-set line below (and a 512-row table costs
# most of a refresh to lay out).
GRID_ROWS = 100
HISTORY_S, HISTORY_STEP_S = 600.0, 15.0  # the highlighted outlier's last 10 minutes


def history_text(o: Outlier, one: list, median: list) -> Text:
    """Two sparklines on one scale: the outlier's series and the fleet median."""
    values = [v for _, v in one] + [v for _, v in median]
    if not values:
        return Text("history: no samples in the last 10 min", style="dim")
    lo, hi = min(values), max(values)
    where = o.host if o.gpu is None else f"{o.host} GPU{o.gpu}"
    width = 40
    return Text.assemble(
        (f"{where} {metric_label(o.metric)}, last {HISTORY_S / 60:.0f} min\n", "bold"),
        (sparkline([v for _, v in one], width, lo, hi), fleet_view.OUTLIER_STYLE),
        ("  this one\n", "dim"),
        (sparkline([v for _, v in median], width, lo, hi), ""), ("  fleet median", "dim"))


class FleetScreen(Screen[str | None]):
    """Returns the name of the host dug into (or None)."""

    VIEW_NAME = "Fleet"  # the keys help (?) lists this view's keys first

    # the head shows the update's age
    SECTIONS: ClassVar[frozenset[Section]] = frozenset({Section.FLEET, Section.CLOCK})

    BINDINGS = [
        Binding("escape", "close", "back", id="fleet.close"),
        Binding("m", "metric(1)", "next metric", id="fleet.next_metric"),
        Binding("M", "metric(-1)", "previous metric", id="fleet.prev_metric"),
        Binding("enter", "dig_in", "dig in (SSH)", id="fleet.dig_in", priority=True),
        Binding("r", "refresh_now", "refresh", id="fleet.refresh"),
        Binding("tab", "app.focus_next", "grid / outliers", show=False),
    ]
    DEFAULT_CSS = """
    FleetScreen { layout: vertical; }
    FleetScreen #fleet-head { height: 1; padding: 0 1; text-style: bold; }
    FleetScreen #fleet-medians { height: auto; max-height: 3; padding: 0 1; }
    FleetScreen #fleet-body { height: 1fr; }
    FleetScreen #fleet-grid-box { width: 3fr; border: round $pane-border; }
    FleetScreen #fleet-outliers-box { width: 2fr; border: round $pane-border; }
    FleetScreen #fleet-grid-box:focus-within, FleetScreen #fleet-outliers-box:focus-within {
        border: round $pane-border-focus;
    }
    FleetScreen DataTable { height: 1fr; }
    FleetScreen #fleet-folded { height: auto; max-height: 4; padding: 0 1; }
    FleetScreen #fleet-history { height: auto; max-height: 3; padding: 0 1; }
    """

    def __init__(self, source=None) -> None:
        super().__init__()
        self._source = source  # default: the cockpit's "fleet" source
        self.metric: str | None = None
        self._fleet_shown: object = None  # the FleetUpdated the grid shows
        self._read_shown: object = None  # the source's read (summary) the grid shows
        self.render_s: float | None = None  # how long the last render took
        self._grid_metric: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="fleet-head")
        yield Static(id="fleet-medians")
        with Horizontal(id="fleet-body"):
            with Vertical(id="fleet-grid-box") as grid_box:
                grid_box.border_title = "Hosts × GPUs"
                yield DataTable(id="fleet-grid", cursor_type="row", zebra_stripes=True)
            with Vertical(id="fleet-outliers-box") as out_box:
                out_box.border_title = "Outliers (|value − median| / MAD)"
                yield DataTable(id="fleet-outliers", cursor_type="row")
                yield Static(id="fleet-history")
        yield Static(id="fleet-folded")
        yield FittingFooter()

    def on_mount(self) -> None:
        self.query_one("#fleet-outliers", DataTable).add_columns("#", "outlier", "MADs")
        app_context(self).refresher.watch(self)

    # --- data -------------------------------------------------------------------

    @property
    def source(self):
        return self._source or app_context(self).cockpit.fleet

    def show_state(self, state: SessionState, force: bool = False) -> None:
        """A new read (the source keeps each one; the transcript records only
        changes) or a new fleet update re-renders the grid; time passing, the head."""
        src = self.source
        read = src.summary if src is not None else None
        if (not force and state.fleet is self._fleet_shown and read is self._read_shown
                and (state.fleet is not None or read is not None)):
            self._render_head()
            return
        self._fleet_shown, self._read_shown = state.fleet, read
        if src is not None and src.snapshot is not None and src.summary is not None:
            self.render_fleet(src.snapshot, src.summary)
        else:
            self.render_recorded()

    def render_fleet(self, snapshot: FleetSnapshot, summary: FleetSummary) -> None:
        t0 = time.perf_counter()
        order = summary.metric_order()
        if self.metric not in order:
            self.metric = order[0] if order else None
        self.query_one("#fleet-medians", Static).update(fleet_view.medians_text(summary))
        self._fill_grid(snapshot, summary)
        self._fill_outliers(summary.outliers)
        odd, normal, n_odd, n_normal = fleet_view.folded_hosts(snapshot, summary)
        folded = Text()
        if n_odd:
            folded.append(f"with outliers ({n_odd}): ", style="bold")
            folded.append(odd + "\n", style=fleet_view.OUTLIER_STYLE)
        folded.append(f"within the fleet ({n_normal}): ", style="bold")
        folded.append(normal or "–")
        self.query_one("#fleet-folded", Static).update(folded)
        self._render_head()
        self.render_s = time.perf_counter() - t0

    def render_recorded(self) -> None:
        """No live source (replay, or not read yet): what the transcript has."""
        e = app_context(self).session.state.fleet
        self._render_head()
        if e is None:
            return
        summary = FleetSummary(hosts=e.hosts, gpus=e.gpus, medians=dict(e.medians), outliers=[
            Outlier(o.host, o.gpu, o.metric, o.value, o.fleet_median, o.distance)
            for o in e.outliers])
        self.query_one("#fleet-medians", Static).update(fleet_view.medians_text(summary))
        self._fill_outliers(summary.outliers)
        hosts = sorted({o.host for o in summary.outliers})
        self.query_one("#fleet-folded", Static).update(
            Text(f"with outliers ({len(hosts)}): ", style="bold")
            + Text(fold(hosts) or "–", style=fleet_view.OUTLIER_STYLE))

    def _render_head(self) -> None:
        src, e = self.source, app_context(self).session.state.fleet
        head = Text("Fleet", style="bold")
        if src is not None:
            head.append(f" · {visible(src.client.url)} · ")
            head.append(src.state, style="green" if src.state == "up" else "yellow")
            if src.reason and src.state != "up":
                head.append(f": {visible(src.reason)}", style="yellow")
        elif e is not None:
            head.append(f" · {visible(e.source)} · recorded")
        else:
            head.append(" · no Prometheus: give --prometheus URL or set [fleet] prometheus",
                        style="yellow")
        if e is not None:
            head.append(f" · {e.hosts} hosts · {e.gpus} GPUs · {e.outlier_count} outliers")
        if src is not None and src.refresh_s is not None:
            head.append(f" · read {src.refresh_s:.2f} s", style="dim")
        if self.metric:
            head.append(f" · grid: {metric_label(self.metric)} (m)", style="dim")
        self.query_one("#fleet-head", Static).update(head)

    def _fill_grid(self, snapshot: FleetSnapshot, summary: FleetSummary) -> None:
        table = self.query_one("#fleet-grid", DataTable)
        if self.metric is None:
            table.clear(columns=True)
            return
        grid = fleet_view.metric_grid(snapshot, summary, self.metric)
        # a refresh keeps the row the cursor is on; another metric starts at the top
        same = self._grid_metric == self.metric and len(table.columns) == 2 + len(grid.columns)
        keep = self._selected_grid_host() if same else None
        self._grid_metric = self.metric
        if same:
            table.clear()  # same columns: their widths need no new layout
        else:
            table.clear(columns=True)
            table.add_columns("host", "worst MADs", *grid.columns)
        threshold = self.source.threshold if self.source is not None else 5.0
        rows = []
        for r in grid.rows[:GRID_ROWS]:
            worst = Text(f"{r.worst:.1f}", justify="right",
                         style=fleet_view.OUTLIER_STYLE if r.worst > threshold else "dim")
            rows.append([Text(r.host), worst] + [
                fleet_view.cell(self.metric, v, d, threshold) for v, d in zip(r.values, r.distances)])
        if len(grid.rows) > GRID_ROWS:
            rest = grid.rows[GRID_ROWS:]
            rows_left = Text(f"+{len(rest)} hosts within {rest[0].worst:.1f} MADs", style="dim")
            rows.append([rows_left, Text(""), *[Text("") for _ in grid.columns]])
        fill(table, rows)
        hosts = [r.host for r in grid.rows[:GRID_ROWS]]
        if keep in hosts:
            table.move_cursor(row=hosts.index(keep), animate=False)

    def _fill_outliers(self, outliers: list[Outlier]) -> None:
        table = self.query_one("#fleet-outliers", DataTable)
        previous = getattr(self, "_outliers", [])
        at = previous[table.cursor_row] if table.row_count and table.cursor_row < len(previous) else None
        table.clear()
        shown = outliers[:MAX_OUTLIER_ROWS]
        fill(table, [(str(i), Text(o.sentence(), style=fleet_view.OUTLIER_STYLE if i == 1 else ""),
                      Text(f"{o.distance:.1f}", justify="right")) for i, o in enumerate(shown, 1)])
        self._outliers = shown
        # a refresh keeps the cursor on the same outlier (host, GPU, metric)
        where = [(o.host, o.gpu, o.metric) for o in shown]
        if at is not None and (at.host, at.gpu, at.metric) in where:
            table.move_cursor(row=where.index((at.host, at.gpu, at.metric)), animate=False)

    def _selected_grid_host(self) -> str | None:
        table = self.query_one("#fleet-grid", DataTable)
        if table.row_count == 0:
            return None
        if table.cursor_row >= min(table.row_count, GRID_ROWS):
            return None  # the "+N hosts" line
        return table.get_row_at(table.cursor_row)[0].plain

    def selected_host(self) -> str | None:
        focused = self.focused
        if isinstance(focused, DataTable) and focused.id == "fleet-outliers":
            outliers = getattr(self, "_outliers", [])
            if focused.row_count and focused.cursor_row < len(outliers):
                return outliers[focused.cursor_row].host
            return None
        return self._selected_grid_host()

    # --- the highlighted outlier's history (/api/v1/query_range) ----------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "fleet-outliers" and event.data_table.has_focus:
            self._show_history(event.cursor_row)

    def on_descendant_focus(self, event) -> None:
        table = self.query_one("#fleet-outliers", DataTable)
        if event.widget is table:
            self._show_history(table.cursor_row)

    def _show_history(self, row: int) -> None:
        """Draw the outlier at ``row`` over time (only while the outliers list
        has focus: a query per highlighted row, not per refresh)."""
        outliers = getattr(self, "_outliers", [])
        if self.source is None:
            return
        if 0 <= row < len(outliers):
            o = outliers[row]
            if getattr(self, "_history_of", None) != (o.host, o.gpu, o.metric):
                self._history_of = (o.host, o.gpu, o.metric)
                async def load() -> None:
                    await self._load_history(o)

                # a coroutine function, not a coroutine: a worker cancelled before
                # it starts (the next row highlighted at once) leaves nothing unawaited
                self._history_worker: Worker[None] = self.run_worker(
                    load, exclusive=True, group="fleet-history", exit_on_error=False)

    async def _load_history(self, o: Outlier) -> None:
        from perftriage.transport.prometheus import PrometheusError

        box = self.query_one("#fleet-history", Static)
        try:
            one, median = await self.source.history(o.metric, o.host, o.gpu,
                                                    seconds=HISTORY_S, step=HISTORY_STEP_S)
        except PrometheusError as exc:
            box.update(Text(f"history: {visible(exc.reason)}", style="yellow"))
            return
        box.update(history_text(o, one, median))

    # --- actions ----------------------------------------------------------------

    def action_metric(self, step: int) -> None:
        src = self.source
        if src is None or src.summary is None:
            return
        order = src.summary.metric_order()
        if not order:
            return
        i = order.index(self.metric) if self.metric in order else 0
        self.metric = order[(i + step) % len(order)]
        self.render_fleet(src.snapshot, src.summary)

    async def action_refresh_now(self) -> None:
        if self.source is not None:
            self.run_worker(self.source.refresh(), exit_on_error=False, group="fleet-refresh")

    def action_dig_in(self) -> None:
        host = self.selected_host()
        if host is None:
            return
        try:
            added = app_context(self).cockpit.dig_in(host)
        except DigInError as exc:
            self.notify(str(exc), severity="error")
            return
        self.notify(f"{host} joins the cockpit over SSH" if added else f"{host} is already a host")
        self.dismiss(host)

    def action_close(self) -> None:
        self.dismiss(None)
