"""The Triage view (``Y``): what is wrong, ranked, phase by phase.

Top: what became of the findings before the current phase (a restart, a
change of level, the baseline): "host-stall: resolved — decode 936 → 2,900
tok/s ▲". Then every host's findings of its current phase, ranked by the
share of the time each explains (severity, cause, share, title). Below: the
highlighted finding whole — its evidence with the witness, its source and
when it was taken, what speaks against it, the fix — and what Enter runs.

Enter on a finding runs its next step on the finding's host (not the host
selected in the cockpit): a stacks record, a profile capture, ncu over the
server's command, the engine's /metrics, or the Logs pane's search; the
findings re-evaluate when its result lands (within a second). A capture or
ncu runs only from here, on Enter: auto mode (``[triage] auto``) never
starts one. Everything shown is the state's (``triage.updated``), so a
replay shows the same view; there Enter says why nothing runs.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Static

from perftriage.core.model.findings import Finding
from perftriage.core.model.state import Section, SessionState
from perftriage.core.clock import clock
from perftriage.core.sanitize import visible
from perftriage.core.view.finding_parts import finding_parts
from perftriage.services.gap.model_bytes import ModelBytes, ModelBytesError, read_model_bytes
from perftriage.services.triage import next_step
from perftriage.ui.screens.views import close_view
from perftriage.ui.app_context import app_context
from perftriage.ui.widgets.logs import LogsPane
from perftriage.ui.widgets.footer import FittingFooter
from perftriage.ui.widgets.row_table import fill, last_column_room
from perftriage.ui.widgets.finding_rich import finding_text, row_cells
from perftriage.ui.widgets.triage_text import (
    FAILED_STYLE,
    earlier_text,
    host_order,
    latest_step,
    server_down,
    step_status,
)


TITLE_MIN_WIDTH = 24  # a finding title's column, however narrow the screen
# steps asked about once before they run (ncu replays each kernel it profiles; a
# capture says that it pauses an eager server on the "⏎ runs" line, and runs on ⏎)
HEAVY = frozenset({"ncu"})
ENGINE_READ_S = 20.0  # the engine's model info and its checkpoint's index, at most


class TriageScreen(Screen[None]):
    VIEW_NAME = "Triage"
    VIEW = True  # Esc: back to the view it was opened from, then the main screen
    # the findings, and the probes their steps ran (running, done, failed: said here)
    SECTIONS: ClassVar[frozenset[Section]] = frozenset({Section.TRIAGE, Section.PROBES})

    BINDINGS = [
        Binding("escape", "close", "back", id="triage.close"),
        Binding("enter", "run_step", "run next step", id="triage.run", show=True,
                tooltip="run the highlighted finding's next step on its host"),
    ]
    DEFAULT_CSS = """
    TriageScreen { layout: vertical; }
    TriageScreen #triage-head { height: auto; padding: 0 1; }
    TriageScreen #triage-earlier { height: auto; max-height: 8; padding: 0 1; }
    TriageScreen #triage-findings { height: auto; max-height: 50%; border: round $pane-border; }
    TriageScreen #triage-detail { height: 1fr; padding: 0 1; border: round $pane-border; }
    """

    def __init__(self, pick: tuple[str, str] | None = None) -> None:
        """``pick``: (host, cause) of the finding to highlight first (a
        hypothesis's evidence opened here)."""
        super().__init__()
        self._pick = pick
        self._rows: list[tuple[str, Finding]] = []  # (host, finding), table order
        self._hosts = 0
        self.outcomes: dict[tuple[str, str], str] = {}  # (host, cause) -> what Enter ran
        # the highlight follows the top finding until the user moves it (then it stays
        # on the same cause across refreshes); a pick from a hypothesis is a move
        self._moved = pick is not None
        self._placed: tuple[str, str] | None = None  # (host, cause) the view highlighted
        self._confirm: tuple[str, str] | None = None  # a heavy step asked about once
        self._state: SessionState | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="triage-head")
        yield Static(id="triage-earlier")
        table: DataTable = DataTable(id="triage-findings", cursor_type="row", zebra_stripes=True)
        table.border_title = "Findings, ranked by the share of the time they explain"
        yield table
        yield Static(id="triage-detail")
        yield FittingFooter()

    def on_mount(self) -> None:
        app = app_context(self)
        app.refresher.watch(self)
        self.query_one("#triage-findings", DataTable).focus()

    # --- rendering ---------------------------------------------------------------

    def show_state(self, state: SessionState) -> None:
        self._state = state
        table = self.query_one("#triage-findings", DataTable)
        picked = (self.selected if self._rows else self._pick) if self._moved else None
        hosts = host_order(state)
        many = len(hosts) > 1
        if not table.columns or many != (self._hosts > 1):
            table.clear(columns=True)
            table.add_columns(*(["host"] if many else []), "severity", "cause", "explains",
                              "title")
        self._hosts = len(hosts)
        table.clear()
        self._rows = []
        earlier = Text()
        rows: list[list[Text]] = []
        for host in hosts:
            e = state.triage[host]
            for line in e.earlier:
                if earlier:
                    earlier.append("\n")
                if many:
                    earlier.append(f"{visible(host)}: ", style="bold")
                earlier.append_text(earlier_text(line))
            for f in e.findings:
                cells: list[Text] = [Text(visible(host))] if many else []
                rows.append(cells + row_cells(finding_parts(f)))
                self._rows.append((host, f))
        # a title longer than the room left ends in "…" (Enter shows it whole
        # below): the table never scrolls sideways
        headers = [c.label.plain for c in table.columns.values()][:-1]
        room = last_column_room(self.size.width, headers, rows, TITLE_MIN_WIDTH)
        for cells in rows:
            cells[-1].truncate(room, overflow="ellipsis")
        fill(table, rows)
        self.query_one("#triage-head", Static).update(self._head(state, hosts))
        self.query_one("#triage-earlier", Static).update(earlier)
        self.query_one("#triage-earlier", Static).display = bool(earlier)
        again = next((i for i, (h, f) in enumerate(self._rows)
                      if (h, f.cause) == picked), None) if picked is not None else None
        if self._rows:
            table.move_cursor(row=again if again is not None else 0)
        self._placed = self.selected
        self._show_detail()

    def _head(self, state: SessionState, hosts: list[str]) -> Text:
        out = Text("Triage", style="bold")
        if not hosts:
            out.append("  no findings yet: the triage needs a decode rate (a followed log or "
                       "the engine's /metrics), GPU readings or a profile capture",
                       style="dim")
            return out
        width = (self.size.width or 200) - 2
        for short in (False, True):  # one line: the short words where the long ones wrap
            out = Text("Triage", style="bold")
            for host in hosts:
                e = state.triage[host]
                new = "" if not e.run_start else " (new process)" if short \
                    else " (a new server process)"
                out.append(f"  · {visible(host)}: {'' if short else 'phase '}since "
                           f"{clock(e.start)}{new}")
                if (down := server_down(state, host)) is not None:
                    out.append(f" — {down[1]}", style="bold red")
            if out.cell_len <= width:
                break
        out.truncate(width, overflow="ellipsis")
        # the hint shortens where the header would wrap (100 columns)
        room = width - out.cell_len
        hint = next((h for h in ("   ⏎ runs the highlighted finding's next step on its host",
                                 "   ⏎ runs the finding's next step", "   ⏎ next step")
                     if len(h) <= room), "")
        out.append(hint, style="dim")
        return out

    @property
    def selected(self) -> tuple[str, str] | None:
        """(host, cause) of the highlighted finding."""
        got = self._current()
        return None if got is None else (got[0], got[1].cause)

    def _current(self) -> tuple[str, Finding] | None:
        table = self.query_one("#triage-findings", DataTable)
        if not self._rows or table.cursor_row is None:
            return None
        i = table.cursor_row
        return self._rows[i] if 0 <= i < len(self._rows) else None

    def _show_detail(self) -> None:
        detail = self.query_one("#triage-detail", Static)
        got = self._current()
        if got is None:
            detail.update(Text("no finding", style="dim"))
            return
        host, f = got
        out = finding_text(finding_parts(f), host)
        p = self._plan(host, f)
        if p is None:
            out.append("\n⏎: nothing to run — the evidence is in", style="dim")
        elif p.kind == "gap":
            out.append("\n⏎ opens the gap form (G): the bytes a step must move", style="bold")
        else:
            out.append("\n⏎ runs: ", style="bold")
            out.append(visible(p.text))
            if p.problem:
                out.append(f" — not now: {visible(p.problem)}", style="yellow")
        key = (host, f.cause)
        if p is not None and p.kind in HEAVY and self._confirm == key:
            out.append("\n⏎ again runs it (HEAVY: it replays every kernel it profiles)",
                       style="bold yellow")
        status = self._step_status(host, f, p)
        ran = self.outcomes.get(key)
        if status is not None:
            out.append("\nlast step: ", style="bold")
            out.append_text(status)
        elif ran:
            out.append("\nran: ", style="bold")
            out.append(visible(ran), style=FAILED_STYLE if "failed" in ran else "green")
        detail.update(out)

    def _step_status(self, host: str, f: Finding,
                     p: next_step.StepPlan | None) -> Text | None:
        """The probe the finding's step ran in this phase: running, done or failed."""
        state = self._state
        told = state.triage.get(host) if state is not None else None
        kind = p.kind if p is not None else (f.next.kind if f.next is not None else "")
        if state is None or told is None:
            return None
        return step_status(state, host, kind, told.start)

    def _plan(self, host: str, f: Finding) -> next_step.StepPlan | None:
        return next_step.plan(app_context(self).cockpit, host, f)  # by (host, cause): live only

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if self.selected != self._placed:  # the user moved it (not a refresh)
            self._moved = True
            self._placed = self.selected
            self._confirm = None
        self._show_detail()

    # --- actions -------------------------------------------------------------------

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_run_step()

    def action_run_step(self) -> None:
        got = self._current()
        if got is None:
            return
        host, f = got
        p = self._plan(host, f)
        if p is None:
            self.notify(f"{f.cause}: no next step — the evidence is in")
            return
        if p.kind == "gap":  # the gap form is the main screen's (G), prefilled from the engine
            self.run_worker(self._open_gap(host), exit_on_error=False, group="triage-step")
            return
        key = (host, f.cause)
        state, told = self._state, (self._state.triage.get(host) if self._state else None)
        busy = latest_step(state, host, p.kind, told.start) if state and told else None
        if busy is not None and not busy.finished:  # never a second copy
            self.notify(f"{p.kind} {busy.probe_id} already {busy.status} on {host} since "
                        f"{clock(busy.started_t or busy.queued_t)}: not started again",
                        severity="warning")
            return
        if p.kind in HEAVY and p.problem is None and self._confirm != key:  # ask once
            self._confirm = key
            self.notify(f"{p.text}: ⏎ again to run it", severity="warning")
            self._show_detail()
            return
        self._confirm = None
        outcome = next_step.run(app_context(self).cockpit, p)
        self.outcomes[key] = outcome.text
        if not outcome.started:
            self.notify(outcome.text, severity="warning")
        elif outcome.search is not None:
            self._search_logs(*outcome.search)
            return
        else:
            self.notify(f"{f.cause}: {outcome.text}")
            if outcome.task is not None:
                task = outcome.task

                async def landed() -> None:
                    text = await task
                    self.outcomes[key] = text
                    self.notify(text)
                    if self.is_attached:
                        self._show_detail()

                self.run_worker(landed(), exit_on_error=False, group="triage-step")
        self._show_detail()

    async def _open_gap(self, host: str) -> None:
        """The gap form, prefilled with what the engine on ``host`` says a step
        moves (its checkpoint's size, its TP size); said when it cannot."""
        cockpit = app_context(self).cockpit
        engine: ModelBytes | None = None
        url = _engine_url(cockpit, host)
        if url is not None and cockpit.session.mode.live:
            hc = cockpit.config.host(host)
            try:
                transport = cockpit.registry.get(host).transport
                async with asyncio.timeout(ENGINE_READ_S):
                    engine = await read_model_bytes(transport, url,
                                                    (hc.python if hc else None) or "python3")
            except (ModelBytesError, KeyError, TimeoutError) as exc:
                self.notify(f"the bytes a step moves, from the engine: {exc or 'no answer'}",
                            severity="warning")
        self.dismiss(None)
        main = getattr(self.app, "main_screen", None)
        if main is not None:
            main.hypotheses.roofline(engine=engine, host=host)

    def _search_logs(self, host: str, pattern: str) -> None:
        """The Logs pane's search, in a log of ``host``."""
        pane = next((s.query(LogsPane).first() for s in self.app.screen_stack
                     if s is not self and s.query(LogsPane)), None)
        self.dismiss(None)
        if pane is None:
            self.notify("no Logs pane to search in", severity="warning")
            return
        if not pane.search_host(host, pattern):
            self.notify(f"no log of {host} followed: o opens one", severity="warning")

    def action_close(self) -> None:
        close_view(self)


def _engine_url(cockpit, host: str) -> str | None:
    """The engine URL the cockpit reads for ``host``: the configured one, else
    a running engine source's (its path is replaced by the info endpoints')."""
    urls = [next_step.metrics_url(cockpit, host)]
    urls += [getattr(s, "url", None) for s in cockpit.sources
             if s.name.startswith("engine:") and getattr(s, "host", None) == host]
    return next((u for u in urls if isinstance(u, str) and u), None)

