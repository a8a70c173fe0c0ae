"""The Textual app: starts the cockpit, owns the global keys, renders
session state through one refresh path.

All work happens in :class:`perftriage.services.cockpit.Cockpit` (no
Textual). Keys that act on a pane's selection are bindings of that pane
(``perftriage.ui.widgets``); the keys here work from any pane: the probe
launch keys ``i g n v w h !`` (and ``a``, all hosts), ``q N ? H G M Y``, and
``o S K`` for logs and servers, ``F =`` for the fleet. The app offers panes what
:class:`perftriage.ui.app_context.AppContext` promises; the state reaches them
through :class:`perftriage.ui.refresh.Refresher`; themes are one
:class:`perftriage.ui.theme_control.ThemeController`. Quitting stops the
cockpit, so the transcript is complete.
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import TypeVar

from textual.app import App
from textual.binding import Binding
from textual.command import CommandPalette
from textual.notifications import SeverityLevel
from textual.widget import Widget

from perftriage import __version__
from perftriage.ui.app_context import ViewPrefs, refuse_in_replay
from perftriage.core.model import events as ev
from perftriage.core.model.hyp_undo import HypothesisUndo
from perftriage.core.store.redact import Redactor
from perftriage.core.store.stream import unreadable_text
from perftriage.ui.palette import GrowCommands, HypothesisCommands, ProbeCommands, ProfileCommands
from perftriage.ui.refresh import Refresher
from perftriage.ui.screens.fanout import FanoutScreen
from perftriage.ui.screens.fleet import FleetScreen
from perftriage.ui.screens.grow_flows import GROW_BINDINGS, GrowFlows
from perftriage.ui.screens.keys_help import KeysScreen
from perftriage.ui.main_screen import MainScreen
from perftriage.ui.key_order_workaround import OrderedKeysApp
from perftriage.ui.flows.probes import ProbeLauncher, probe_bindings
from perftriage.ui.screens.prompt import PromptScreen
from perftriage.ui.screens.quit_guard import QuitConfirmScreen, quit_question, unfinished_work
from perftriage.ui.flows.servers import ServerFlows
from perftriage.services.cockpit import Cockpit
from perftriage.services.investigation.replay import ReplaySession
from perftriage.core.sanitize import visible
from perftriage.services.investigation.report_file import ReportError, write_report
from perftriage.ui.theme_control import ThemeCommands, ThemeController
from perftriage.ui.widgets.logs import LogsPane
from perftriage.ui.probe_target import ProbeTarget
from perftriage.ui.widgets.probes import ProbesPane

# Actions that act on the cockpit's panes: not under a modal (the probe
# output viewer's read-only text lets keys through to the app).
MAIN_SCREEN_ONLY = {"probe", "probe_template", "probe_all_hosts", "probe_host"}
P = TypeVar("P", bound=Widget)  # a pane of the main screen


# The young generation is collected after this many new container objects,
# not CPython's 700: a log flood makes ~100k of them a second (rows, scan
# results, strips), and a collection every 700 cost ~12 % of the app's CPU in
# bench_logs; at 10,000, ~3 %. Cycles are still collected, less often.
GC_YOUNG_THRESHOLD = 10_000


def relax_gc() -> None:
    """Collect the young generation less often (see GC_YOUNG_THRESHOLD).
    Process-wide, so the app sets it when it starts, not at import."""
    _young, middle, old = gc.get_threshold()
    if _young < GC_YOUNG_THRESHOLD:
        gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


class PerftriageApp(OrderedKeysApp[int]):
    TITLE = "perftriage"
    BINDINGS = [
        # what is wrong comes first: it must stay in the footer at any width
        Binding("Y", "triage", "Triage", id="triage.open",
                tooltip="What's wrong: the findings ranked by the share of the time they "
                        "explain; Enter runs a finding's next step on its host"),
        *probe_bindings(),
        Binding("a", "probe_all_hosts", "All hosts", id="probe.all_hosts",
                tooltip="toggle: run probes on every host at once"),
        Binding("q", "quit", "Quit", id="app.quit",
                tooltip="quit; asks once while probes run or a form has text (q or y quits)"),
        Binding("N", "note", "Note", id="session.note"),
        Binding("question_mark", "toggle_help", "Keys", id="app.help",
                tooltip="Show or hide every key of the focused pane and the app"),
        Binding("H", "hyp_add", "Hypothesis", id="hypothesis.add",
                tooltip="Add a hypothesis that might explain the gap"),
        Binding("G", "roofline", "Gap", id="roofline.open",
                tooltip="Roofline: the decode floor and the gap to it"),
        Binding("M", "report", "Report", id="report.write",
                tooltip="Write the Markdown report of this session next to its transcript"),
        Binding("o", "log_open", "Open log", id="logs.open"),
        Binding("S", "server_start", "Server", id="server.start"),
        Binding("K", "server_stop", "Stop server", id="server.stop"),
        Binding("F", "fleet", "Fleet", id="fleet.open",
                tooltip="Fleet view from Prometheus: medians, outliers; enter digs in over SSH"),
        Binding("b", "baseline", "Baseline", id="baseline.mark", show=False,
                tooltip="Mark a baseline (now, a run, a range): views compare the live state with it"),
        Binding("P", "profile", "Profile", id="profile.open",
                tooltip="Which kernels eat the step: captures from a running server"),
        Binding("T", "stacks", "Stacks", id="stacks.open",
                tooltip="Where the engine's Python spends its time: the stacks samples (py-spy)"),
        Binding("equals_sign", "fanout_folded", "Fold fan-out", id="fleet.fanout",
                tooltip="The selected fan-out's answers folded by node set, like clubak"),
        *GROW_BINDINGS,
    ]
    COMMANDS = App.COMMANDS | {ProbeCommands, HypothesisCommands, ThemeCommands,
                               ProfileCommands, GrowCommands}

    def __init__(self, cockpit: Cockpit, *, theme: str | None = None,
                 config_path: Path | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.cockpit = cockpit
        self.session = cockpit.session
        self.title = f"perftriage {__version__}"
        self.probe_target = ProbeTarget(
            state=self.session.state,
            hosts=lambda: cockpit.registry.names or list(self.session.state.hosts))
        self.hyp_undo = HypothesisUndo()  # u in the Hypotheses pane
        self.view_prefs = ViewPrefs()  # per pane, while the app runs: log wrap
        self.session.subscribe(self.hyp_undo.observe)
        self.refresher = Refresher(self, self.session)
        self.themes = ThemeController(self, theme, config_path)
        # perftriage watch: nothing is written, not even a theme choice
        self.read_only = not self.session.mode.writes
        self.themes.saves = not self.read_only
        self.launcher = ProbeLauncher(self, cockpit, self.probe_target,
                                      lambda: self._pane(ProbesPane))
        self.servers = ServerFlows(self, cockpit, lambda: self._pane(LogsPane))
        self.grow = GrowFlows(self, cockpit, config_path)

    @property
    def theme_request(self) -> str | None:
        """``--theme NAME`` (wins over ``[ui] theme``)."""
        return self.themes.request

    @theme_request.setter
    def theme_request(self, name: str | None) -> None:
        self.themes.request = name

    def on_mount(self) -> None:
        relax_gc()
        self.themes.apply_preferences(self.cockpit.config.ui)
        # table cells hold colours baked from theme variables: redraw all
        self.theme_changed_signal.subscribe(self, lambda _theme: self.refresher.mark())
        self.refresher.start()
        if isinstance(self.session, ReplaySession):  # perftriage replay, watch: a player
            from perftriage.ui.replay_screen import ReplayScreen

            self.push_screen(ReplayScreen(self.session.replayer))
        else:
            self.push_screen(MainScreen())
        # Set once (a recording read, in a replay or watch, again each second
        # for its unreadable lines): the elapsed time lives in the header's
        # ElapsedClock, which redraws itself each second without re-laying out the screen.
        self._show_sub_title()
        if not self.session.mode.live:
            self.set_interval(1.0, self._show_sub_title)
        self.run_worker(self._start_cockpit(), exit_on_error=False, group="cockpit")

    async def _start_cockpit(self) -> None:
        await self.cockpit.start()
        self.grow.tell_recorded()  # a continued investigation: what was not re-opened

    def _show_sub_title(self) -> None:
        """``NAME · MODE``, and ``· N events unreadable`` when lines of the
        transcript read (replayed, watched, continued) were skipped."""
        mode = self.session.mode.label
        text = f"{visible(self.session.state.name)} · {mode}"  # name: from a file
        if self.session.unreadable:
            text += f" · {unreadable_text(self.session.unreadable)}"
        if text != self.sub_title:
            self.sub_title = text

    @property
    def main_screen(self) -> MainScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)

    def _pane(self, cls: type[P]) -> P | None:
        screen = self.main_screen
        return screen.query_one(cls) if screen is not None and screen.is_mounted else None

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Toasts are plain text, always: they carry host names (from
        Prometheus labels too), hypothesis titles, paths and error messages,
        and Textual markup is not only style but actions (``[@click=...]``)."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in MAIN_SCREEN_ONLY and self.screen is not self.main_screen:
            return False
        return True

    def _refuse_in_replay(self, *, annotation: bool = False) -> bool:
        return refuse_in_replay(self, annotation=annotation)

    # --- session ---------------------------------------------------------------

    async def action_quit(self) -> None:
        """Quits, after asking once when probes are running or a form has
        text (``q`` again or ``y`` then quits)."""
        if not self.cockpit.replay and not isinstance(self.screen, QuitConfirmScreen):
            reason = unfinished_work(self, self.session.state)
            if reason is not None:
                self.push_screen(quit_question(reason),
                                 lambda yes: self.call_later(self._stop_and_exit) if yes else None)
                return
        await self._stop_and_exit()

    async def _stop_and_exit(self) -> None:
        await self.cockpit.stop("quit")
        self.exit(0)

    async def on_unmount(self) -> None:
        # Also reached on a crash or ctrl+c: the transcript gets closed.
        self.refresher.stop()
        if not self.session.state.ended:
            await self.cockpit.stop("exit")

    def action_toggle_help(self) -> None:
        """Every key that works here, the app's first, then the focused
        pane's, then Textual's scrolling keys (``screens.keys_help``)."""
        if isinstance(self.screen, KeysScreen):
            self.screen.dismiss(None)
        else:
            self.push_screen(KeysScreen(self.screen))

    def action_note(self) -> None:
        if self._refuse_in_replay(annotation=True):
            return

        def add(value: str | None) -> None:
            if value:
                self.session.emit(ev.NoteAdded(text=value))
                self.notify(f"note added: {value}")

        self.push_screen(
            PromptScreen("note", "note", placeholder="what just happened, e.g. restarting server"),
            add,
        )

    # --- probes ----------------------------------------------------------------

    def action_probe(self, kind: str) -> None:
        if not self._refuse_in_replay():
            self.launcher.ask(kind)

    def action_probe_template(self, name: str) -> None:
        if not self._refuse_in_replay():
            self.launcher.template(name)

    def action_probe_host(self, host: str) -> None:
        self.launcher.select_host(host)

    def action_probe_all_hosts(self) -> None:
        self.launcher.toggle_all_hosts()

    # --- hypotheses, roofline, report ------------------------------------------

    def action_hyp_add(self) -> None:
        if (screen := self.main_screen) is not None:
            screen.hypotheses.add()

    def action_roofline(self) -> None:
        if (screen := self.main_screen) is not None:
            screen.hypotheses.roofline()

    async def action_report(self) -> None:
        if self.read_only:
            self._refuse_in_replay()
            return
        try:
            out = await write_report(self.session, Redactor(self.cockpit.config.security.redact))
        except ReportError as exc:
            self.notify(f"report not written: {exc}", severity="error")
            return
        self.notify(f"report written: {out}")

    # --- logs and servers ------------------------------------------------------

    def action_log_open(self) -> None:
        if not self._refuse_in_replay():
            self.servers.open_log()

    def action_server_start(self) -> None:
        if not self._refuse_in_replay():
            self.servers.start_server()

    def action_server_stop(self) -> None:
        if not self._refuse_in_replay():
            self.servers.stop_servers()

    # --- growing the cockpit: hosts, engines, Prometheus, packs (screens/grow_flows.py)

    def action_grow(self, what: str) -> None:
        if not self._refuse_in_replay():
            getattr(self.grow, what)()

    # --- fleet ------------------------------------------------------------------

    def action_fleet(self) -> None:
        def dug(host: str | None) -> None:
            if host is not None:
                self.notify(f"{host}: connecting over SSH; probes and logs can target it now")

        self.push_screen(FleetScreen(), dug)

    def action_baseline(self) -> None:
        from perftriage.ui.flows.baseline import ask_baseline

        ask_baseline(self, self.cockpit.baseline)

    def action_profile(self, capture: bool = False) -> None:
        from perftriage.ui.screens.profile import ProfileScreen
        from perftriage.ui.screens.views import open_view

        view = open_view(self, ProfileScreen, lambda: ProfileScreen(capture_on_open=capture))
        if capture and view is not None:  # already open: capture there
            view.action_capture()

    def action_profile_import(self) -> None:
        from perftriage.ui.flows.profile_import import import_traces

        import_traces(self)

    def action_kernels_import(self) -> None:
        from perftriage.ui.flows.profile_import import import_ncu

        import_ncu(self)

    def action_stacks(self) -> None:
        from perftriage.ui.screens.stacks import StacksScreen
        from perftriage.ui.screens.views import open_view

        open_view(self, StacksScreen, StacksScreen)

    def action_triage(self) -> None:
        from perftriage.ui.screens.triage import TriageScreen
        from perftriage.ui.screens.views import open_view

        open_view(self, TriageScreen, TriageScreen)

    def action_fanout_folded(self) -> None:
        """The selected probe's fan-out folded by node set (else the latest fan-out)."""
        probes = self.session.state.probes
        pane = self._pane(ProbesPane)
        pid = pane.selected_probe_id if pane is not None else None
        group = probes[pid].group if pid in probes else None
        if group is None:
            group = next((p.group for p in reversed(probes.values()) if p.group), None)
        if group is None:
            self.notify("no fan-out yet: press a to run the next probe on all hosts")
            return
        self.push_screen(FanoutScreen(group))

    # --- themes: the App hooks Textual calls, handed to the controller ----------

    def get_theme_variable_defaults(self) -> dict[str, str]:
        defaults = super().get_theme_variable_defaults()
        return {**defaults, **ThemeController.variable_defaults(self.current_theme)}

    def search_themes(self) -> None:
        self.themes.search()

    def on_command_palette_option_highlighted(self, event: CommandPalette.OptionHighlighted) -> None:
        self.themes.preview(event)

    def on_command_palette_closed(self, event: CommandPalette.Closed) -> None:
        self.themes.end_preview()
