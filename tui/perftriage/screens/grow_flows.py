"""Growing the cockpit from the keyboard and the palette: add a host
(``A``), remove one (``X``), add an engine ``/metrics`` URL (``U``), set the
Prometheus URL (``P``), load a hypothesis pack (``L``), and save what joined
into the config file (``C``). Following a log is ``o``
(:mod:`perftriage.screens.server_flows`). The work is
:mod:`perftriage.services.grow`; this module only asks and tells."""

from __future__ import annotations

from pathlib import Path

from textual.app import App
from textual.binding import Binding

from perftriage.core.sanitize import visible
from perftriage.screens.prompt import PromptScreen
from perftriage.services import grow
from perftriage.services.cockpit import Cockpit

SAVE_HINT = "C saves it into {config}"

# (key, flow, label, palette text, help): the app binds the keys to
# ``grow('<flow>')``; the palette lists the same flows
GROW_FLOWS = (
    ("A", "add_host", "Add host", "host: add",
     "a host joins now: user@host, an ssh alias or a config name"),
    ("X", "remove_host", "Remove host", "host: remove",
     "stop sampling, probing and following a host"),
    ("U", "add_engine", "Engine URL", "engine: add /metrics URL",
     "scrape an SGLang/vLLM /metrics as seen from a host"),
    ("P", "set_prometheus", "Prometheus", "fleet: set Prometheus URL",
     "where the Fleet view reads medians and outliers"),
    ("L", "load_pack", "Load pack", "hypothesis: load a pack",
     "[[hypotheses]] with checks, from a file or a bundled pack"),
    ("C", "save_config", "Save to config", "config: save what joined",
     "write hosts, logs, engines and Prometheus added here into the config file"),
)
GROW_BINDINGS = [Binding(key, f"grow('{flow}')", label, id=f"grow.{flow}", tooltip=help_text,
                         show=False)
                 for key, flow, label, _, help_text in GROW_FLOWS]


class GrowFlows:
    def __init__(self, app: App, cockpit: Cockpit, config_path: Path | None) -> None:
        self.app = app
        self.cockpit = cockpit
        self.config_path = config_path

    def _joined(self, what: str) -> None:
        """Say what joined, and where it can be saved when wanted there."""
        hint = f"; {SAVE_HINT.format(config=self.config_path)}" if self.config_path else ""
        self.app.notify(visible(f"{what} (recorded in the investigation{hint})"))

    def _failed(self, exc: Exception) -> None:
        self.app.notify(visible(str(exc)), severity="error")

    # --- hosts ------------------------------------------------------------------

    def add_host(self) -> None:
        def done(value: str | None) -> None:
            if not value:
                return
            try:
                added = grow.add_host(self.cockpit, value)
            except grow.GrowError as exc:
                self._failed(exc)
                return
            if not added:
                self.app.notify(visible(f"{value}: already in the cockpit"))
                return
            self._joined(f"host {', '.join(added)} joined: connecting")

        self.app.push_screen(PromptScreen(
            "hosts: add a host", "host-add", placeholder="user@host[:port], an ssh alias or a "
            "config name", help="sampled, probed and followed like a configured host"), done)

    def remove_host(self, name: str | None = None) -> None:
        names = [n for n in self.cockpit.registry.names]
        if not names:
            self.app.notify("no host to remove", severity="warning")
            return

        async def remove(value: str | None) -> None:
            if not value:
                return
            try:
                await grow.remove_host(self.cockpit, value.strip())
            except grow.GrowError as exc:
                self._failed(exc)
                return
            self.app.notify(visible(f"host {value} removed: no longer sampled or probed"))

        if name is not None:
            self.app.run_worker(remove(name), exclusive=False, group="grow")
            return

        def chosen(value: str | None) -> None:
            self.app.run_worker(remove(value), exclusive=False, group="grow")

        self.app.push_screen(PromptScreen(
            "hosts: remove a host", "host-remove", value=names[-1],
            help=f"hosts: {', '.join(names)}",
            validate=lambda v: None if v.strip() in names else f"not one of: {', '.join(names)}"),
            chosen)

    # --- engines, Prometheus, packs -------------------------------------------------

    def add_engine(self) -> None:
        hosts = list(self.cockpit.registry.names)

        def done(value: str | None) -> None:
            if not value:
                return
            url, _, host = value.partition(" on ")
            try:
                grow.add_engine(self.cockpit, url, host.strip() or (hosts[0] if hosts else "localhost"))
            except grow.GrowError as exc:
                self._failed(exc)
                return
            self._joined(f"engine {url.strip()} joined: scraped once a second")

        self.app.push_screen(PromptScreen(
            "engine: add a /metrics URL", "engine-add",
            placeholder="http://127.0.0.1:30000/metrics [on HOST]",
            help=f"read as seen from the host (default {hosts[0] if hosts else 'localhost'}; "
                 f"hosts: {', '.join(hosts)})"), done)

    def set_prometheus(self) -> None:
        def done(value: str | None) -> None:
            if not value:
                return
            try:
                grow.set_prometheus(self.cockpit, value)
            except grow.GrowError as exc:
                self._failed(exc)
                return
            self._joined(f"Prometheus {value.strip()}: the Fleet view (F) reads it")

        self.app.push_screen(PromptScreen(
            "fleet: set the Prometheus URL", "prometheus-set",
            value=self.cockpit.config.fleet.prometheus or "", placeholder="http://127.0.0.1:9090",
            help="the Fleet view's medians and outliers come from here"), done)

    def load_pack(self) -> None:
        if grow.pack_loader() is None:
            self.app.notify(grow.PACK_UNAVAILABLE, severity="warning")
            return

        def done(value: str | None) -> None:
            if not value:
                return
            try:
                added = grow.load_pack(self.cockpit, value)
            except grow.GrowError as exc:
                self._failed(exc)
                return
            self.app.notify(visible(f"pack {value}: {added} hypotheses added"))

        self.app.push_screen(PromptScreen(
            "hypotheses: load a pack", "pack-load", placeholder="a pack file or a bundled name",
            help="[[hypotheses]] with title, note and check"), done)

    # --- the config file ---------------------------------------------------------------

    def save_config(self) -> None:
        if self.config_path is None:
            self.app.notify("no config file to save into", severity="warning")
            return
        try:
            changes = grow.save_to_config(self.cockpit, self.config_path)
        except grow.GrowError as exc:
            self._failed(exc)
            return
        if not changes:
            self.app.notify("nothing to save: the config has everything that joined")
            return
        self.app.notify(visible(f"saved into {self.config_path}: {'; '.join(changes)}"))
