"""Command-palette entries ("namespace: verb") of the cockpit: probes,
hypotheses, roofline and report. Each runs the same action as its key: an
app action for global keys, the pane's own action for pane keys."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from textual.app import App
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.widget import Widget

from perftriage.ui.app_context import app_context
from perftriage.core import probes
from perftriage.ui.screens.grow_flows import GROW_FLOWS
from perftriage.ui.widgets.hypotheses import HypothesesPane
from perftriage.ui.widgets.probes import ProbesPane

Entry = tuple[str, Callable[[], object], str]  # (text, callback, help)


def app_action(app: App, action: str) -> Callable[[], object]:
    # after the palette has closed: the action may open a screen of its own
    return lambda: app.call_later(app.run_action, action)


def pane_action(app: App, pane: type[Widget], action: str) -> Callable[[], object]:
    def run() -> None:
        for screen in reversed(app.screen_stack):
            for widget in screen.query(pane):
                app.call_later(widget.run_action, action)
                return

    return run


class EntryProvider(Provider):
    def entries(self) -> Iterator[Entry]:  # pragma: no cover - abstract
        raise NotImplementedError

    async def discover(self) -> Hits:
        for text, callback, help_text in self.entries():
            yield DiscoveryHit(text, callback, text=text, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for text, callback, help_text in self.entries():
            if (score := matcher.match(text)) > 0:
                yield Hit(score, matcher.highlight(text), callback, text=text, help=help_text)


class ProbeCommands(EntryProvider):
    """"probe: import", ..., the ``[[probes]]`` templates, the target host."""

    def entries(self) -> Iterator[Entry]:
        app = self.app
        cockpit = app_context(app).cockpit
        for kind, spec in probes.KINDS.items():
            yield f"probe: {kind}", app_action(app, f"probe({kind!r})"), spec.help
        for t in cockpit.config.probes:
            yield (f"probe: {t.name}", app_action(app, f"probe_template({t.name!r})"),
                   t.description or f"template: {t.kind} {' '.join(t.args)}")
        for host in cockpit.registry.names:
            yield (f"probe: run on {host}", app_action(app, f"probe_host({host!r})"),
                   "probes from now on run on this host")
        yield ("probe: run on all hosts (toggle)", app_action(app, "probe_all_hosts"),
               "fan out every probe to all hosts; differing results are marked ≠")
        yield ("probe: rerun selected", pane_action(app, ProbesPane, "rerun"),
               "queue the selected probe again")
        yield ("probe: cancel selected", pane_action(app, ProbesPane, "cancel"),
               "kill the selected probe")
        yield ("probe: show output", pane_action(app, ProbesPane, "output"),
               "stdout, stderr, detail, copyable")


class HypothesisCommands(EntryProvider):
    """``hypothesis: ...``, ``roofline: gap`` and ``report: write``."""

    def entries(self) -> Iterator[Entry]:
        app = self.app
        yield ("hypothesis: add", app_action(app, "hyp_add"),
               "Add a hypothesis that might explain the gap")
        for text, action, help_text in (
            ("hypothesis: details", "dialog('details')", "Evidence of the highlighted hypothesis"),
            ("hypothesis: attach probe for", "attach('for')", "Selected/last probe supports it"),
            ("hypothesis: attach probe against", "attach('against')", "Selected/last probe refutes it"),
            ("hypothesis: pick evidence", "dialog('evidence')", "A probe, log line, gap or note"),
        ):
            yield text, pane_action(app, HypothesesPane, action), help_text
        yield "roofline: gap", app_action(app, "roofline"), "Decode floor per token and the gap to it"
        yield "report: write", app_action(app, "report"), "Markdown report next to the transcript"


class ProfileCommands(EntryProvider):
    """``profile: open``, ``profile: capture``, ``profile: import FILE…`` and ``stacks: open``."""

    def entries(self) -> Iterator[Entry]:
        app = self.app
        yield ("profile: open", app_action(app, "profile"),
               "Which kernels eat the step: the captures of this session")
        yield ("profile: capture", app_action(app, "profile(True)"),
               "Profile N steps of a running SGLang/vLLM server through its host")
        yield ("profile: import FILE…", app_action(app, "profile_import"),
               "Trace files already here (one per rank, or an nsys CSV) into this investigation")
        yield ("kernels: import CSV…", app_action(app, "kernels_import"),
               "An Nsight Compute CSV already here, as an ncu result of this investigation")
        yield ("stacks: open", app_action(app, "stacks"),
               "Where the engine's Python spends its time: the stacks samples of this session")


class GrowCommands(EntryProvider):
    """``host: add``, ``engine: add /metrics URL``, ... (screens/grow_flows.py),
    ``log: follow a file`` and one ``host: remove NAME`` per host."""

    def entries(self) -> Iterator[Entry]:
        app = self.app
        for _, flow, _, text, help_text in GROW_FLOWS:
            yield text, app_action(app, f"grow({flow!r})"), help_text
        yield "log: follow a file", app_action(app, "log_open"), "[host:]/path, followed like tail -F"
        for host in app_context(app).cockpit.registry.names:
            yield (f"host: remove {host}", _remover(app, host),
                   "stop sampling, probing and following it")


def _remover(app: App, host: str) -> Callable[[], object]:
    def remove() -> None:
        grow = getattr(app, "grow", None)
        if grow is not None:
            app.call_later(grow.remove_host, host)

    return remove
