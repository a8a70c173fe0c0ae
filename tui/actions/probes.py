"""Probe keys: open a small form, queue the probe on the selected host."""

from __future__ import annotations

from textual.binding import Binding

from tui.actions.base import ActionsMixin
from tui.core import probes
from tui.screens.prompt import PromptScreen, split_args
from tui.widgets.probes import ProbesPane


class ProbeActions(ActionsMixin):
    BINDINGS = [
        Binding("i", "probe('import')", "Import", id="probe.import"),
        Binding("exclamation_mark", "probe('shell')", "Shell", id="probe.shell"),
    ]

    def selected_host(self) -> str:
        names = list(self.session.state.hosts)
        return names[0] if names else "localhost"

    def selected_probe_id(self) -> str | None:
        screen = self.main_screen  # type: ignore[attr-defined]
        return screen.query_one(ProbesPane).selected_probe_id if screen else None

    def action_probe(self, kind: str) -> None:
        if self.refuse_in_replay():
            return
        spec = probes.get(kind)

        def parse(value: str) -> list[str]:
            return [value] if kind == "shell" else split_args(value)

        def validate(value: str) -> str | None:
            try:
                spec.validate(parse(value))
            except ValueError as exc:
                return str(exc)
            return None

        def launched(value: str | None) -> None:
            if value is None:
                return
            self.cockpit.probes.enqueue(self.selected_host(), kind, parse(value))
            self.refresh_panes()  # type: ignore[attr-defined]

        self.push_screen(  # type: ignore[attr-defined]
            PromptScreen(
                f"probe: {kind} on {self.selected_host()}",
                kind,
                placeholder=spec.usage,
                help=spec.help,
                validate=validate,
            ),
            launched,
        )
