"""The cockpit: four titled panes, header and footer.

The panes render themselves (the app's refresh path calls them when their
sections changed) and handle their own keys. When a pane needs a modal —
a probe's output, a host's detail, a hypothesis dialog, a log-search
prompt — it posts a message and this screen shows it: widgets never push
screens.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.screen import Screen

from perftriage.core.search import pattern_error
from perftriage.ui.app_context import app_context
from perftriage.ui.screens.host_detail import HostDetailScreen
from perftriage.ui.flows.hypotheses import HypothesisFlows
from perftriage.ui.screens.probe_output import ProbeOutputScreen
from perftriage.ui.screens.prompt import PromptScreen
from perftriage.ui.widgets.footer import FittingFooter
from perftriage.ui.widgets.header import CockpitHeader
from perftriage.ui.widgets.hosts import HostsPane
from perftriage.ui.widgets.hypotheses import HypothesesPane
from perftriage.ui.widgets.log_view import LogView
from perftriage.ui.widgets.logs import LogsPane
from perftriage.ui.widgets.probes import ProbesPane


PANES = ("hosts", "probes", "logs", "hypotheses")


class MainScreen(Screen):
    """``1``–``4`` focus a pane directly, ``z`` zooms the focused pane to the
    whole screen and back (Esc also restores)."""

    BINDINGS = [
        *(Binding(str(i), f"focus_pane('{pane}')", pane.capitalize(), show=False,
                  id=f"pane.focus_{pane}", tooltip=f"focus the {pane.capitalize()} pane")
          for i, pane in enumerate(PANES, 1)),
        Binding("z", "zoom", "Zoom", id="pane.zoom",
                tooltip="maximize the focused pane; z or Esc restores"),
    ]
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
        yield FittingFooter()

    def _focused_pane(self):
        node = self.focused
        while node is not None and node.id not in PANES:
            node = node.parent
        return node

    def action_focus_pane(self, pane: str) -> None:
        if self.maximized is not None:
            self.minimize()
        target = self.query_one(f"#{pane}")
        focusable = [w for w in target.query("*") if w.focusable]
        # the pane's body (its table, log or host list), not a tab strip
        body = [w for w in focusable if type(w).__name__ in ("DataTable", "LogView", "HostsBody")]
        if body or focusable:
            # now, not deferred (Widget.focus waits for the App's queue): the
            # key typed right behind 1-4 is for the pane it names
            self.set_focus((body or focusable)[0])

    def action_zoom(self) -> None:
        if self.maximized is not None:
            self.minimize()
            return
        pane = self._focused_pane()
        if pane is None:
            self.notify("focus a pane first (1-4)")
            return
        self.maximize(pane, container=False)

    @property
    def hypotheses(self) -> HypothesisFlows:
        return HypothesisFlows(self.app, app_context(self).cockpit,
                               lambda: self.query_one(HypothesesPane))

    def on_probes_pane_output_requested(self, message: ProbesPane.OutputRequested) -> None:
        if message.probe_id in app_context(self).session.state.probes:
            self.app.push_screen(ProbeOutputScreen(message.probe_id))

    def on_hosts_pane_host_selected(self, message: HostsPane.HostSelected) -> None:
        self.query_one(ProbesPane).show_target()

    def on_hosts_pane_detail_requested(self, message: HostsPane.DetailRequested) -> None:
        self.app.push_screen(HostDetailScreen(message.host))

    def on_hypotheses_pane_requested(self, message: HypothesesPane.Requested) -> None:
        self.hypotheses.open(message.dialog, message.hyp_id)

    def on_log_view_prompt_requested(self, message: LogView.PromptRequested) -> None:
        on_submit = message.on_submit
        if message.validate is not None:  # not a regex: a time
            screen = PromptScreen(message.title, message.kind, placeholder="HH:MM[:SS]",
                                  value=message.value, validate=message.validate,
                                  help="a time as the log writes it (HH:MM[:SS], MM-DD HH:MM)")
        else:
            screen = PromptScreen(message.title, message.kind, placeholder="regex (smart case)",
                                  value=message.value, validate=pattern_error,
                                  help="a regex (RE2); lower case = case-insensitive")
        self.app.push_screen(screen, lambda value: on_submit(value) if value is not None
                             else None)
