"""The Textual app: renders session state, turns keys into actions.

All work happens in :class:`tui.services.cockpit.Cockpit` (no Textual);
the app starts it, re-renders panes at frame rate when state changed, and
stops it on quit so the transcript is complete.
"""

from __future__ import annotations

from textual.app import App
from textual.binding import Binding

from tui import __version__
from tui.core import events as ev
from tui.core import probes
from tui.screens.main import MainScreen
from tui.screens.prompt import PromptScreen, split_args
from tui.services.cockpit import Cockpit
from tui.widgets.format import duration
from tui.widgets.probes import ProbesPane


class PerftriageApp(App[int]):
    TITLE = "perftriage"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("i", "probe('import')", "Import", id="probe.import"),
        Binding("exclamation_mark", "probe('shell')", "Shell", id="probe.shell"),
        Binding("N", "note", "Note", id="session.note"),
    ]

    def __init__(self, cockpit: Cockpit, **kwargs) -> None:
        super().__init__(**kwargs)
        self.cockpit = cockpit
        self.session = cockpit.session
        self.title = f"perftriage {__version__}"

    def on_mount(self) -> None:
        self.push_screen(MainScreen())
        self.set_interval(1.0, self._tick)
        self._tick()
        self.run_worker(self.cockpit.start(), exit_on_error=False, group="cockpit")

    def _tick(self) -> None:
        mode = "replay" if self.cockpit.replay else "live"
        elapsed = self.session.state.last_t if self.cockpit.replay else self.session.elapsed
        self.sub_title = f"{self.session.state.name} · {mode} · {duration(elapsed)}"

    @property
    def main_screen(self) -> MainScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)

    def refresh_panes(self) -> None:
        if (screen := self.main_screen) is not None and screen.is_mounted:
            screen.refresh_panes()

    # --- actions -------------------------------------------------------------

    def selected_host(self) -> str:
        names = list(self.session.state.hosts)
        return names[0] if names else "localhost"

    def action_probe(self, kind: str) -> None:
        if self.cockpit.replay:
            self.notify("replay is read-only", severity="warning")
            return
        spec = probes.get(kind)

        def validate(value: str) -> str | None:
            try:
                spec.validate(split_args(value) if kind != "shell" else [value])
            except ValueError as exc:
                return str(exc)
            return None

        def launched(value: str | None) -> None:
            if value is None:
                return
            args = [value] if kind == "shell" else split_args(value)
            self.cockpit.probes.enqueue(self.selected_host(), kind, args)
            self.refresh_panes()

        self.push_screen(
            PromptScreen(
                f"probe: {kind} on {self.selected_host()}",
                kind,
                placeholder=spec.usage,
                help=spec.help,
                validate=validate,
            ),
            launched,
        )

    def action_note(self) -> None:
        def add(value: str | None) -> None:
            if value:
                self.session.emit(ev.NoteAdded(text=value))
                self.notify(f"note added: {value}")

        self.push_screen(PromptScreen("note", "note", placeholder="what just happened"), add)

    def selected_probe_id(self) -> str | None:
        screen = self.main_screen
        return screen.query_one(ProbesPane).selected_probe_id if screen else None

    async def action_quit(self) -> None:
        await self.shutdown()
        self.exit(0)

    async def shutdown(self) -> None:
        await self.cockpit.stop("quit")

    async def on_unmount(self) -> None:
        # Also reached on a crash or ctrl+c: the transcript gets closed.
        if not self.session.state.ended:
            await self.cockpit.stop("exit")
