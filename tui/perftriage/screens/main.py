"""The cockpit: four titled panes, header and footer.

The panes render themselves (the app's refresh path calls them when their
sections changed) and handle their own keys. When a pane needs a modal —
a probe's output, a host's detail, a hypothesis dialog, a log-search
prompt — it posts a message and this screen shows it: widgets never push
screens.
"""

from __future__ import annotations

import re

from textual.app import ComposeResult
from textual.containers import Grid
from textual.screen import Screen
from textual.widgets import Footer

from perftriage.cockpit_app import cockpit_app
from perftriage.screens.host_detail import HostDetailScreen
from perftriage.screens.hypothesis_flows import HypothesisFlows
from perftriage.screens.probe_output import ProbeOutputScreen
from perftriage.screens.prompt import PromptScreen
from perftriage.widgets.header import CockpitHeader
from perftriage.widgets.hosts import HostsPane
from perftriage.widgets.hypotheses import HypothesesPane
from perftriage.widgets.log_view import LogView
from perftriage.widgets.logs import LogsPane
from perftriage.widgets.probes import ProbesPane


def regex_error(text: str) -> str | None:
    try:
        re.compile(text)
    except re.error as exc:
        return f"not a regex: {exc}"
    return None


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

    @property
    def hypotheses(self) -> HypothesisFlows:
        return HypothesisFlows(self.app, cockpit_app(self).cockpit,
                               lambda: self.query_one(HypothesesPane))

    def on_probes_pane_output_requested(self, message: ProbesPane.OutputRequested) -> None:
        if message.probe_id in cockpit_app(self).session.state.probes:
            self.app.push_screen(ProbeOutputScreen(message.probe_id))

    def on_hosts_pane_detail_requested(self, message: HostsPane.DetailRequested) -> None:
        self.app.push_screen(HostDetailScreen(message.host))

    def on_hypotheses_pane_requested(self, message: HypothesesPane.Requested) -> None:
        self.hypotheses.open(message.dialog, message.hyp_id)

    def on_log_view_prompt_requested(self, message: LogView.PromptRequested) -> None:
        on_submit = message.on_submit
        self.app.push_screen(
            PromptScreen(message.title, message.kind, placeholder="regex (smart case)",
                         value=message.value, validate=regex_error,
                         help="a Python regex; lower case = case-insensitive"),
            lambda value: on_submit(value) if value is not None else None,
        )
