"""Logs pane: one tab per followed source plus a merged "all" view, the
throughput of the selected source (sparkline + latest values + ms/token at
batch 1) and a line-API log view rendered from the bounded rings in state.
ctrl+w stops following the selected tab's log."""

from __future__ import annotations

from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Sparkline, Static, Tab, Tabs

from perftriage.core.view.log_status import follow_text, stale_note
from perftriage.core.view.log_window import ALL, source_label
from perftriage.core.parse.log_metrics import LogMetrics
from perftriage.core.model.state import Section, SessionState
from perftriage.core.sanitize import visible
from perftriage.ui.widgets.format import markup
from perftriage.core.view.baseline_view import ENGINE_METRICS
from perftriage.ui.widgets.baseline_text import baseline_lines
from perftriage.ui.widgets.engine import EngineStrip, LatencyHeatmap, shown_engines
from perftriage.ui.widgets.log_view import LogView
from perftriage.ui.widgets.pane import Pane


def _tab_id(source: str) -> str:
    return "src-all" if source == ALL else f"src-{source}"


def _fmt(v: float | None, spec: str = ".1f") -> str:
    return "–" if v is None else format(v, spec)


def metrics_line(m: LogMetrics) -> Content:
    """The figures of the latest log lines; a milestone's name (the log's
    text) goes in as text, never as markup."""
    if m.count == 0:
        names = [x.name for x in m.milestones]
        return markup("$engine: $what", engine=m.engine or "log",
                      what=names[-1] if names else "no metrics yet")
    d, p = m.last_decode, m.last_prefill
    gen = m.latest_gen_tps
    parts = [f"gen [b]{_fmt(gen)}[/b] tok/s"]
    ms, label = m.token_latency  # batch-aware: @bs1 only when the batch is 1
    if ms is not None:
        parts.append(f"[b]{ms:.2f}[/b] {label}")
    src = d or p
    if src is not None:
        parts.append(f"run {src.running if src.running is not None else '–'}")
        parts.append(f"queue {src.queued if src.queued is not None else '–'}")
        if src.token_usage is not None:
            parts.append(f"usage {src.token_usage:.2f}")
    if m.input_tps:
        parts.append(f"in {_fmt(m.input_tps[-1], '.0f')} tok/s")
    if m.engine_count > 1:  # data parallel: the figures above are totals over engines
        parts.append(f"{m.engine_count} engines")
    if m.spec_accept_len:
        parts.append(f"accept {m.spec_accept_len:.2f}")
    if m.engine_read_gbs is not None:
        parts.append(f"est. read {m.engine_read_gbs:.0f} GB/s/GPU")
    if m.errors:
        parts.append(f"[red]{m.errors} fatal[/red]")
    if m.retractions:  # memory pressure, the server goes on: a warning folded xN
        parts.append(f"[yellow]KV full: retracted ×{m.retractions}[/yellow]")
    if m.ready:
        parts.append("[green]ready[/green]")
    return Content.from_markup(" · ".join(parts))  # figures only: written here


# the pane's height from which the latency heatmap (8 rows) still leaves
# five log lines under the tabs, figures and engine strip (a 45-row terminal
# has it; 30 rows do not)
HEATMAP_MIN_ROWS = 20


class LogsPane(Pane):
    # a quiet log turns stale (CLOCK); the engine strip and heatmap (ENGINES)
    SECTIONS = frozenset({Section.LOGS, Section.ENGINES, Section.CLOCK, Section.BASELINE})
    DEFAULT_CSS = """
    LogsPane Tabs { height: 2; }
    LogsPane #logs-metrics-row { height: 1; }
    LogsPane #logs-metrics { width: 1fr; height: 1; }
    LogsPane #logs-spark { width: 24; height: 1; }
    LogsPane #logs-status { height: 1; color: $text-muted; }
    LogsPane #logs-latency { height: 7; }
    LogsPane #logs-baseline { height: auto; max-height: 3; text-wrap: nowrap;
                              text-overflow: ellipsis; }
    """
    BINDINGS = [
        Binding("right_square_bracket", "cycle(1)", "Next log", id="logs.next_source"),
        Binding("left_square_bracket", "cycle(-1)", "Prev log", id="logs.prev_source"),
        Binding("ctrl+w", "close_log", "Close log", show=False, id="logs.close"),
    ]

    def __init__(self, title: str, **kwargs) -> None:
        super().__init__(title, **kwargs)
        self._sources: list[str] = []
        self.selected = ALL
        self._select_when_shown: str | None = None  # a tab not added yet
        # what the one-row widgets show now: a new text costs a repaint
        self._metrics_shown: tuple = ()
        self._status_shown: str | None = None
        self._metrics_content = Content("")  # set in compose: what the mode offers

    def compose(self):
        yield Tabs(Tab("all", id=_tab_id(ALL)), id="logs-tabs")
        with Horizontal(id="logs-metrics-row"):
            # o follows a log only where hosts run (not in a replay or watch)
            live = self.ctx.session.mode.live
            self._metrics_content = Content(
                "no log sources" + (" — o opens a log file" if live else ""))
            yield Static(self._metrics_content, id="logs-metrics")
            yield Sparkline([], id="logs-spark")
        # the engine's own figures from its /metrics, when an endpoint is configured
        yield EngineStrip(id="logs-engine")
        against = Static("", id="logs-baseline")  # the engine against the baseline (b)
        against.display = False
        yield against
        yield LatencyHeatmap(id="logs-latency")
        yield LogView(self.ctx.session.state, ALL, id="logs-view")
        yield Static("", id="logs-status")

    def _render_engines(self, state: SessionState) -> None:
        src = state.logs.get(self.selected)
        engines = shown_engines(state, src.host if src is not None else None)
        self.query_one("#logs-engine", EngineStrip).show(engines)
        lines = baseline_lines(self, state, ENGINE_METRICS, src.host if src is not None else None,
                               per_line=4)
        shown = self.query_one("#logs-baseline", Static)
        shown.display = bool(lines)
        if lines:
            shown.update(Content("\n").join(lines[:3]))
        with_rows = [es for es in engines if es.itl_rows]
        self.query_one("#logs-latency", LatencyHeatmap).show(
            with_rows[0] if with_rows else (engines[0] if engines else None))

    @property
    def view(self) -> LogView:
        return self.query_one("#logs-view", LogView)

    def reset(self, state: SessionState) -> None:
        tabs = self.query_one("#logs-tabs", Tabs)
        for sid in [s for s in self._sources if s not in state.logs]:
            tabs.remove_tab(_tab_id(sid))  # a source opened after the new moment
            self._sources.remove(sid)
        if self.selected not in state.logs:
            self.selected = ALL
        self._metrics_shown = ()
        self._status_shown = None
        self.view.set_source(state, self.selected)  # rebuild: lines went back too

    def show_state(self, state: SessionState) -> None:
        view = self.view
        if view.index.state is not state:
            view.set_source(state, self.selected)
        tabs = self.query_one("#logs-tabs", Tabs)
        for sid, src in state.logs.items():
            if src.shown_in:  # one file, one tab: its lines are in that source's
                continue
            if sid not in self._sources:
                self._sources.append(sid)
                # the log's name as text: a tab label given as str is read as markup
                tabs.add_tab(Tab(Content(visible(source_label(src))), id=_tab_id(sid)))
        if self._select_when_shown in self._sources:
            self.select(self._select_when_shown)
        view.sync()
        self._render_engines(state)  # each widget skips what it already shows
        self._render_metrics(state)
        self._render_status(state)

    def _metrics_source(self, state: SessionState):
        if self.selected != ALL:
            return state.logs.get(self.selected)
        with_metrics = [s for s in state.logs.values() if s.metrics.count or s.metrics.milestones]
        return with_metrics[-1] if with_metrics else None

    def _render_metrics(self, state: SessionState) -> None:
        src = self._metrics_source(state)
        if src is None:
            return
        m = src.metrics
        stale = stale_note(src, self._now(state))
        key = (src.source_id, m.count, len(m.milestones), m.errors, stale and stale.split(";")[0])
        if key == self._metrics_shown:
            return
        self._metrics_shown = key
        # which source the figures are from, only where several could be
        several = self.selected == ALL and len(state.logs) > 1
        label = markup("[dim]$source[/dim] ", source=source_label(src)) if several \
            else Content("")
        if stale:
            label += markup("[yellow]$note[/yellow] ", note=stale)
        # fixed one-row widgets: no layout for new text (a layout costs ~50 ms)
        self._metrics_content = label + metrics_line(m)
        self.query_one("#logs-metrics", Static).update(self._metrics_content, layout=False)
        spark = self.query_one("#logs-spark", Sparkline)
        spark.data = list(m.gen_tps)[-60:]
        self._fit_spark()

    def _fit_spark(self) -> None:
        """The sparkline only where it leaves the figures their room: it
        never covers text."""
        spark = self.query_one("#logs-spark", Sparkline)
        needed = self._metrics_content.cell_length
        room = self.size.width - 2 - needed
        spark.display = bool(spark.data) and room >= 12
        if spark.display:
            spark.styles.width = min(24, room - 1)

    def on_resize(self, event) -> None:
        self._fit_spark()
        # at 100x30 the header rows and the 8-row heatmap left no log line: lines win
        self.query_one("#logs-latency", LatencyHeatmap).fit(self.size.height >= HEATMAP_MIN_ROWS)

    def _now(self, state: SessionState) -> float:
        """Session seconds now (live), or of the latest event (replay)."""
        session = self.ctx.session
        return state.last_t if session.replay else session.elapsed

    def _render_status(self, state: SessionState) -> None:
        if not state.logs:  # nothing to follow: the row above already says how to open one
            self._set_status("")
            return
        parts = [self.view.status()]
        # the source's own state first: "following · 0 lines" alone hid tail's errors
        now = self._now(state)
        if self.selected != ALL and (src := state.logs.get(self.selected)) is not None:
            if not src.open or src.follow != "following":
                # the view's own "following" (it scrolls with new lines) would read as the source's
                parts[0] = parts[0].removeprefix("following · ")
                parts.insert(0, follow_text(src, now))
            if src.dropped:
                parts.append(f"{src.dropped:,} lines not recorded (transcript cap)")
        elif self.selected == ALL:
            unwell = [s for s in state.logs.values() if s.open and s.follow != "following"]
            if unwell:
                first = unwell[0]
                more = f" (+{len(unwell) - 1} more)" if len(unwell) > 1 else ""
                parts.insert(0, f"{first.path}: {follow_text(first, now)}{more}")
        self._set_status(" · ".join(parts))

    def _set_status(self, text: str) -> None:
        """The row is all text, no markup: the source's reason and path and the
        filter and search the user typed go in as they are (controls shown)."""
        if text != self._status_shown:
            self._status_shown = text
            self.query_one("#logs-status", Static).update(Content(visible(text)), layout=False)

    def on_log_view_changed(self, event: LogView.Changed) -> None:
        self._render_status(self.ctx.session.state)

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        tab_id = event.tab.id or ""
        source = ALL if tab_id == "src-all" else tab_id.removeprefix("src-")
        if source == self.selected:
            return
        self.selected = source
        self._metrics_shown = ()
        state = self.ctx.session.state
        self.view.set_source(state, source)
        self._render_metrics(state)
        self._render_status(state)
        self._render_engines(state)  # the selected log's host's endpoint first

    def action_cycle(self, step: int) -> None:
        tabs = self.query_one("#logs-tabs", Tabs)
        if step > 0:
            tabs.action_next_tab()
        else:
            tabs.action_previous_tab()

    def select(self, source: str) -> None:
        """Show ``source``'s tab, now or as soon as its tab is added."""
        if source != ALL and source not in self._sources:
            self._select_when_shown = source
            return
        self._select_when_shown = None
        self.query_one("#logs-tabs", Tabs).active = _tab_id(source)

    def show_line(self, source_id: str, line: int) -> bool:
        """Show ``source_id``'s absolute line ``line`` (0-based) with the
        cursor on it and focus the log: in its tab if that one or the merged
        tab is shown, else in the merged tab."""
        if self.selected not in (ALL, source_id):
            self.selected = ALL
            self.view.set_source(self.ctx.session.state, ALL)
            self.query_one("#logs-tabs", Tabs).active = _tab_id(ALL)
        self.view.focus()
        return self.view.show_line(source_id, line)

    def search_host(self, host: str, pattern: str) -> bool:
        """Search ``pattern`` in a log of ``host`` (the triage's next step):
        its tab shown (the newest open log of the host), the search applied,
        the log focused. False when no log of the host is followed."""
        state = self.ctx.session.state
        mine = [sid for sid, src in state.logs.items() if src.host == host]
        if not mine:
            return False
        open_ = [sid for sid in mine if state.logs[sid].open]
        sid = (open_ or mine)[-1]
        if sid not in self._sources:
            self.show_state(state)
        if self.selected != sid:
            self.selected = sid
            self._metrics_shown = ()
            self.view.set_source(state, sid)
            self.query_one("#logs-tabs", Tabs).active = _tab_id(sid)
        self.view.focus()
        self.view.apply_search(pattern or None)
        return True

    def action_close_log(self) -> None:
        if self.refuse_in_replay():
            return
        if self.selected == ALL:
            self.notify("select a log tab to close it", severity="warning")
            return
        cockpit = self.ctx.cockpit
        self.run_worker(cockpit.logs.close(self.selected, "closed by user"), group="logs")
