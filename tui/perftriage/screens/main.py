"""The cockpit: four titled panes, header and footer."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Grid
from textual.screen import Screen
from textual.widgets import Footer

from perftriage.widgets.header import CockpitHeader
from perftriage.widgets.hosts import HostsPane
from perftriage.widgets.hypotheses import HypothesesPane
from perftriage.widgets.logs import LogsPane
from perftriage.widgets.probes import ProbesPane

FRAME_S = 1 / 10


class MainScreen(Screen):
    DEFAULT_CSS = """
    MainScreen #cockpit {
        grid-size: 2 2;
        grid-columns: 1fr 1fr;
        grid-rows: 1fr 1fr;
    }
    """

    def compose(self) -> ComposeResult:
        yield CockpitHeader()
        with Grid(id="cockpit"):
            yield HostsPane("Hosts", id="hosts")
            yield ProbesPane("Probes", id="probes")
            yield LogsPane("Logs", id="logs")
            yield HypothesesPane("Hypotheses", id="hypotheses")
        yield Footer()

    def on_mount(self) -> None:
        self.set_interval(FRAME_S, self.refresh_panes)
        self.set_interval(1.0, lambda: self.refresh_panes(force_clock=True))
        self.refresh_panes(force_clock=True)

    def refresh_panes(self, force_clock: bool = False) -> None:
        """Re-render panes whose state section changed; ``force_clock`` also
        re-renders the time-dependent ones (elapsed, stale ages)."""
        state = self.app.session.state
        for pane in self.panes:
            pane.sync(state, force=force_clock and pane.clock_driven)

    @property
    def panes(self):
        return [
            self.query_one(HostsPane),
            self.query_one(ProbesPane),
            self.query_one(LogsPane),
            self.query_one(HypothesesPane),
        ]
