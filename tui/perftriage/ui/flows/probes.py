"""Launching probes (each kind's key, ``i g n v w h !``, and the palette):
a small form, then the probe is queued on the target host(s).

The target is the host chosen in the form (remembered for the next probe)
or, with ``a`` toggled on, every host at once (fan-out). ``n`` (nvsmi) and
templates take no form. The keys, labels and forms come from the kinds
themselves (:mod:`perftriage.core.probe_kinds`): nothing here names one.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import App
from textual.binding import Binding

from perftriage.core import probes
from perftriage.core.view.targets import engine_host
from perftriage.ui.screens.prompt import PromptScreen
from perftriage.services.cockpit import Cockpit
from perftriage.services.triage import next_step
from perftriage.ui.probe_target import ALL_HOSTS, ProbeTarget
from perftriage.ui.widgets.probes import ProbesPane

def probe_bindings() -> list[Binding]:
    """One binding per kind that declares a key (id ``probe.<kind>``), in the
    kinds' order; its tooltip is the kind's help."""
    return [Binding(spec.key, f"probe({spec.name!r})", spec.label or spec.name,
                    id=f"probe.{spec.name}",
                    tooltip=spec.help + ("; runs at once on the probe target (no form)"
                                         if spec.max_args == 0 else ""))
            for spec in probes.KINDS.values() if spec.key]


class ProbeLauncher:
    def __init__(self, app: App, cockpit: Cockpit, target: ProbeTarget,
                 pane: Callable[[], ProbesPane | None]) -> None:
        self.app = app
        self.cockpit = cockpit
        self.target = target
        self._pane = pane

    @property
    def hosts(self) -> list[str]:
        return self.target.names()

    def _show_target(self) -> None:
        if (pane := self._pane()) is not None:
            pane.show_target()

    def select_host(self, host: str) -> None:
        self.target.choose(host)
        self._show_target()

    def toggle_all_hosts(self) -> None:
        self.target.all_hosts = not self.target.all_hosts
        self._show_target()
        self.app.notify(f"probes run {self.target.label(self.hosts, False)}")

    def _launch(self, kind: str, args: list[str], target: str) -> None:
        runner = self.cockpit.probes
        try:
            if target == ALL_HOSTS:
                runner.enqueue_all(kind, args)
            else:
                runner.enqueue(target, kind, args)
        except (probes.ProbeUsageError, KeyError) as exc:
            self.app.notify(str(exc), title="probe not queued", severity="error")

    def template(self, name: str) -> None:
        self._launch(name, [], self.target.target(self.hosts))

    def ask(self, kind: str) -> None:
        """The form for ``kind`` (none when it takes no arguments), then queue it."""
        spec = probes.get(kind)
        if spec.max_args == 0:
            self._launch(kind, [], self.target.target(self.hosts))
            return

        def validate(value: str) -> str | None:
            try:
                spec.validate(spec.parse_line(value))
            except ValueError as exc:
                return str(exc)
            return None

        hosts = self.cockpit.registry.names
        choices = [(h, h) for h in hosts]
        if len(hosts) > 1:
            choices.append((f"all hosts ({len(hosts)})", ALL_HOSTS))
        current = self.target.target(self.hosts)
        server = None
        if spec.engine and current != ALL_HOSTS:
            # what reads the engine goes where the [[servers]] profile runs
            current, server = engine_host(self.cockpit.session.state, hosts, current)
        help_text = spec.form_help or spec.help
        if server is not None:
            help_text = f"host {server.note()}\n{help_text}"
        value = spec.form_value
        offer = None if spec.server_form is None or current == ALL_HOSTS else spec.server_form(
            next_step.server_pid(self.cockpit, current), next_step.engine_port(self.cockpit, current))
        if offer is not None:  # the server's own processes, not a name's best guess
            value = offer[0]
            help_text = f"on {current}: {offer[1]}\n{help_text}"
        last = None if spec.form_retry is None else max(
            (p for p in self.cockpit.session.state.probes.values()
             if p.kind == kind and p.host == current and p.finished),
            key=lambda p: p.finished_t or 0.0, default=None)
        retry = None if last is None or spec.form_retry is None else spec.form_retry(last)
        if retry is not None:  # what the last one on this host lacked (stacks: --carry)
            value = f"{value} {retry[0]}".strip()
            help_text = f"{retry[1]}\n{help_text}"
        screen = PromptScreen(
            f"probe: {kind}" + (f"  — {spec.form_note}" if spec.form_note else ""),
            f"probe.{kind}",
            placeholder=spec.usage,
            help=Text(help_text),  # a host's and a server's name: never markup
            value=value,
            validate=validate,
            choices=choices if len(choices) > 1 else None,
            choice=current if len(choices) > 1 else None,
            choice_label="host",
            allow_empty=spec.min_args == 0,  # stacks: ⏎ on an empty line dumps
        )

        def launched(value: str | None) -> None:
            if value is None:
                return
            target = screen.choice or current
            if server is None or target != server.host:  # the server's host offered: not chosen
                self.target.choose(target)
                self._show_target()
            self._launch(kind, spec.parse_line(value), target)

        self.app.push_screen(screen, launched)
