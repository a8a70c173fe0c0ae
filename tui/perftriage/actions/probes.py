"""Probe keys: open a small form, queue the probe on the target host(s).

The target is the host chosen in the form (remembered for the next probe)
or, with ``a`` toggled on, every host at once (fan-out). ``n`` (nvsmi) and
templates take no form. The command palette lists the same actions as
"probe: ..." entries, the user templates from ``[[probes]]``, and
"probe: run on HOST" to pick the target.
"""

from __future__ import annotations

from functools import partial
from textual.binding import Binding
from textual.command import DiscoveryHit, Hit, Hits, Provider

from perftriage.actions.base import ActionsMixin
from perftriage.core import probes
from perftriage.screens.probe_output import ProbeOutputScreen
from perftriage.screens.prompt import PromptScreen
from perftriage.widgets.probes import ProbesPane

ALL_HOSTS = "*"

# kind -> (key, footer label)
PROBE_KEYS = {
    "import": ("i", "Import"),
    "grep": ("g", "Grep"),
    "nvsmi": ("n", "nvsmi"),
    "version": ("v", "Version"),
    "which": ("w", "Which"),
    "http": ("h", "HTTP"),
    "shell": ("exclamation_mark", "Shell"),
}


class ProbeCommands(Provider):
    """Command palette: "probe: import", ..., templates, target host."""

    def _commands(self):
        app = self.app
        for kind, (_, _) in PROBE_KEYS.items():
            spec = probes.get(kind)
            yield f"probe: {kind}", partial(app.action_probe, kind), spec.help
        for t in app.cockpit.config.probes:  # type: ignore[attr-defined]
            yield (f"probe: {t.name}", partial(app.action_probe_template, t.name),
                   t.description or f"template: {t.kind} {' '.join(t.args)}")
        for host in app.cockpit.registry.names:  # type: ignore[attr-defined]
            yield (f"probe: run on {host}", partial(app.select_probe_host, host),
                   "probes from now on run on this host")
        yield ("probe: run on all hosts (toggle)", app.action_probe_all_hosts,
               "fan out every probe to all hosts; differing results are marked ≠")
        yield "probe: rerun selected", app.action_probe_rerun, "queue the selected probe again"
        yield "probe: cancel selected", app.action_probe_cancel, "kill the selected probe"
        yield "probe: show output", app.action_probe_output, "stdout, stderr, detail, copyable"

    async def discover(self) -> Hits:
        for name, callback, help_text in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)


class ProbeActions(ActionsMixin):
    BINDINGS = [
        *(Binding(key, f"probe('{kind}')", label, id=f"probe.{kind}",
                  tooltip=probes.get(kind).help)
          for kind, (key, label) in PROBE_KEYS.items()),
        Binding("r", "probe_rerun", "Rerun", id="probe.rerun",
                tooltip="queue the selected probe (or its whole fan-out) again"),
        Binding("x", "probe_cancel", "Cancel", id="probe.cancel",
                tooltip="cancel the selected probe (kills the remote process)"),
        Binding("a", "probe_all_hosts", "All hosts", id="probe.all_hosts",
                tooltip="toggle: run probes on every host at once"),
        Binding("enter", "probe_output", "Output", id="probe.output",
                tooltip="show the selected probe's command, stdout, stderr, detail"),
    ]
    PROVIDERS = (ProbeCommands,)

    probe_host: str | None = None
    probe_all_hosts: bool = False

    # --- target -----------------------------------------------------------

    def selected_host(self) -> str:
        names = self.cockpit.registry.names or list(self.session.state.hosts)
        if self.probe_host in names:
            return self.probe_host  # type: ignore[return-value]
        return names[0] if names else "localhost"

    def probe_target_label(self) -> str:
        if self.cockpit.replay:
            return ""
        if self.probe_all_hosts:
            return f"→ all hosts ({len(self.cockpit.registry.names)})"
        return f"→ {self.selected_host()}"

    def select_probe_host(self, host: str) -> None:
        self.probe_host, self.probe_all_hosts = host, False
        self._show_target()

    def action_probe_all_hosts(self) -> None:
        if not self._on_main_screen():
            return
        self.probe_all_hosts = not self.probe_all_hosts
        self._show_target()
        self.notify(f"probes run {self.probe_target_label()}")  # type: ignore[attr-defined]

    def _show_target(self) -> None:
        pane = self._probes_pane()
        if pane is not None:
            pane.border_subtitle = self.probe_target_label()

    def _probes_pane(self) -> ProbesPane | None:
        return self.pane(ProbesPane)

    def selected_probe_id(self) -> str | None:
        pane = self._probes_pane()
        return pane.selected_probe_id if pane is not None else None

    # --- launching ----------------------------------------------------------

    def _launch(self, kind: str, args: list[str], target: str) -> None:
        runner = self.cockpit.probes
        try:
            if target == ALL_HOSTS:
                runner.enqueue_all(kind, args)
            else:
                runner.enqueue(target, kind, args)
        except (probes.ProbeUsageError, KeyError) as exc:
            self.notify(str(exc), title="probe not queued", severity="error")  # type: ignore[attr-defined]
            return
        self.refresh_panes()  # type: ignore[attr-defined]

    def _on_main_screen(self) -> bool:
        """Probe keys act on the cockpit only, not under a modal (the output
        viewer's read-only text lets keys through to the app)."""
        return self.screen is self.main_screen  # type: ignore[attr-defined]

    def _target(self) -> str:
        return ALL_HOSTS if self.probe_all_hosts else self.selected_host()

    def action_probe(self, kind: str) -> None:
        if not self._on_main_screen():
            return
        if self.refuse_in_replay():
            return
        spec = probes.get(kind)
        if spec.max_args == 0:
            self._launch(kind, [], self._target())
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
        screen = PromptScreen(
            f"probe: {kind}" + ("  — runs AS SHELL" if kind == "shell" else ""),
            f"probe.{kind}",
            placeholder=spec.usage,
            help=spec.help,
            validate=validate,
            choices=choices if len(choices) > 1 else None,
            choice=self._target() if len(choices) > 1 else None,
            choice_label="host",
        )

        def launched(value: str | None) -> None:
            if value is None:
                return
            target = screen.choice or self._target()
            if target == ALL_HOSTS:
                self.probe_all_hosts = True
            else:
                self.probe_host, self.probe_all_hosts = target, False
            self._show_target()
            self._launch(kind, spec.parse_line(value), target)

        self.push_screen(screen, launched)  # type: ignore[attr-defined]

    def action_probe_template(self, name: str) -> None:
        if not self._on_main_screen():
            return
        if self.refuse_in_replay():
            return
        self._launch(name, [], self._target())

    # --- the selected probe ----------------------------------------------------

    def action_probe_rerun(self) -> None:
        if not self._on_main_screen():
            return
        if self.refuse_in_replay():
            return
        pid = self.selected_probe_id()
        if pid is None:
            self.notify("no probe selected")  # type: ignore[attr-defined]
            return
        runner = self.cockpit.probes
        p = self.session.state.probes[pid]
        try:
            if p.group:  # a fan-out re-runs as a fan-out over the same hosts
                members = [q for q in self.session.state.probes.values() if q.group == p.group]
                runner.enqueue_all(p.kind, p.args, hosts=[q.host for q in members],
                                   timeout=p.timeout_s)
            else:
                runner.rerun(pid)
        except (probes.ProbeUsageError, KeyError) as exc:
            self.notify(str(exc), title="probe not queued", severity="error")  # type: ignore[attr-defined]
        self.refresh_panes()  # type: ignore[attr-defined]

    def action_probe_cancel(self) -> None:
        if not self._on_main_screen():
            return
        pid = self.selected_probe_id()
        if pid is None:
            return
        if not self.cockpit.probes.cancel(pid):
            self.notify(f"{pid} is not queued or running")  # type: ignore[attr-defined]

    def action_probe_output(self, probe_id: str | None = None) -> None:
        if not self._on_main_screen():
            return
        pid = probe_id or self.selected_probe_id()
        if pid is None or pid not in self.session.state.probes:
            self.notify("no probe selected")  # type: ignore[attr-defined]
            return
        self.push_screen(ProbeOutputScreen(pid))  # type: ignore[attr-defined]
