"""The Textual app: renders session state, turns keys into actions.

All work happens in :class:`perftriage.services.cockpit.Cockpit` (no Textual);
the app starts it, the main screen re-renders panes at frame rate when
state changed, and quitting stops the cockpit so the transcript is complete.
Feature keys live in ``tui/perftriage/actions/`` (one mixin per feature).
"""

from __future__ import annotations

from textual.app import App

from perftriage import __version__
from perftriage.actions.fleet import FleetActions
from perftriage.actions.hosts import HostsActions
from perftriage.actions.hypotheses import HypothesesActions
from perftriage.actions.logs import LogsActions
from perftriage.actions.probes import ProbeActions
from perftriage.actions.session import SessionActions
from perftriage.actions.themes import ThemesActions
from perftriage.screens.main import MainScreen
from perftriage.screens.ordered_keys import OrderedKeysApp
from perftriage.services.cockpit import Cockpit
from perftriage.core.sanitize import visible

FEATURES = (
    SessionActions,
    ProbeActions,
    HostsActions,
    LogsActions,
    HypothesesActions,
    ThemesActions,
    FleetActions,
)


class PerftriageApp(OrderedKeysApp, *FEATURES, App[int]):  # type: ignore[misc]
    TITLE = "perftriage"
    BINDINGS = [b for feature in FEATURES for b in feature.BINDINGS]
    COMMANDS = App.COMMANDS | {p for feature in FEATURES for p in feature.PROVIDERS}

    def __init__(self, cockpit: Cockpit, **kwargs) -> None:
        super().__init__(**kwargs)
        self.cockpit = cockpit
        self.session = cockpit.session
        self.title = f"perftriage {__version__}"

    def on_mount(self) -> None:
        self.apply_ui_preferences()  # theme + [ui] keymap (tui/perftriage/actions/themes.py)
        replayer = getattr(self.session, "replayer", None)  # perftriage replay: a player
        if replayer is not None:
            from perftriage.screens.replay import ReplayScreen

            self.push_screen(ReplayScreen(replayer))
        else:
            self.push_screen(MainScreen())
        self._set_sub_title()
        self.run_worker(self.cockpit.start(), exit_on_error=False, group="cockpit")

    def _set_sub_title(self) -> None:
        # Set once: the elapsed time lives in the header's ElapsedClock, which
        # redraws itself each second without re-laying out the screen.
        mode = "REPLAY" if self.cockpit.replay else "live"
        self.sub_title = f"{visible(self.session.state.name)} · {mode}"  # name: from a file

    @property
    def main_screen(self) -> MainScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)

    def refresh_panes(self) -> None:
        if (screen := self.main_screen) is not None and screen.is_mounted:
            screen.refresh_panes()

    async def action_quit(self) -> None:
        await self.cockpit.stop("quit")
        self.exit(0)

    async def on_unmount(self) -> None:
        # Also reached on a crash or ctrl+c: the transcript gets closed.
        if not self.session.state.ended:
            await self.cockpit.stop("exit")
