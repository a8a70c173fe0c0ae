"""Growing the cockpit from the keyboard and the palette: add a host
(``A``), remove one (``X``), add an engine ``/metrics`` URL (``U``), set the
Prometheus URL (``P``), load a hypothesis pack (``L``), and save what joined
into the config file (``C``). Following a log is ``o``
(:mod:`perftriage.ui.flows.servers`). The work is
the :class:`~perftriage.services.cockpit.Cockpit`'s growing methods; this
module only asks and tells."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from textual.app import App
from textual.binding import Binding

from perftriage.core.sanitize import visible
from perftriage.ui.screens.prompt import PromptScreen
from perftriage.services.cockpit import Cockpit
from perftriage.services.sources.base import JoinError

T = TypeVar("T")
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
    ("R", "set_prometheus", "Prometheus", "fleet: set Prometheus URL",
     "where the Fleet view reads medians and outliers"),
    ("L", "load_pack", "Load pack", "hypothesis: load a pack",
     "[[hypotheses]] with checks, from a file or a bundled pack"),
    ("C", "save_config", "Save to config", "config: save what joined",
     "write hosts, logs, engines and Prometheus added here into the config file"),
    ("O", "reopen_recorded", "Re-open recorded", "investigation: re-open what it recorded",
     "a continued investigation: start the hosts, engines and logs its recording names "
     "(each log checked: a regular file, no link, no secrets path)"),
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

    def _try(self, work: Callable[[], T]) -> T | None:
        """``work()``, or None when it raised JoinError (said as an error)."""
        try:
            return work()
        except JoinError as exc:
            self._failed(exc)
            return None

    def _ask(self, prompt: PromptScreen, work: Callable[[str], T],
             said: Callable[[str, T], str | None]) -> None:
        """Ask with ``prompt``, run ``work(answer)``, then tell what joined:
        ``said(answer, result)`` (None: nothing joined, said already)."""
        def done(value: str | None) -> None:
            if not value:
                return
            result = self._try(lambda: work(value))
            if result is not None and (message := said(value, result)) is not None:
                self._joined(message)

        self.app.push_screen(prompt, done)

    # --- hosts ------------------------------------------------------------------

    def add_host(self) -> None:
        def said(value: str, added: list[str]) -> str | None:
            if not added:
                self.app.notify(visible(f"{value}: already in the cockpit"))
                return None
            return f"host {', '.join(added)} joined: connecting"

        self._ask(PromptScreen(
            "hosts: add a host", "host-add", placeholder="user@host[:port], an ssh alias or a "
            "config name", help="sampled, probed and followed like a configured host"),
            self.cockpit.add_hosts, said)

    def remove_host(self, name: str | None = None) -> None:
        names = list(self.cockpit.registry.names)
        if not names:
            self.app.notify("no host to remove", severity="warning")
            return

        async def remove(value: str | None) -> None:
            if not value:
                return
            try:
                await self.cockpit.remove_host(value.strip())
            except JoinError as exc:
                self._failed(exc)
                return
            self.app.notify(visible(f"host {value} removed: no longer sampled or probed"))

        if name is not None:
            self.app.run_worker(remove(name), exclusive=False, group="grow")
            return
        self.app.push_screen(PromptScreen(
            "hosts: remove a host", "host-remove", value=names[-1],
            help=f"hosts: {', '.join(names)}",
            validate=lambda v: None if v.strip() in names else f"not one of: {', '.join(names)}"),
            remove)

    # --- engines, Prometheus, packs -------------------------------------------------

    def add_engine(self) -> None:
        hosts = list(self.cockpit.registry.names)
        default = hosts[0] if hosts else "localhost"

        def add(value: str) -> str:
            url, _, host = value.partition(" on ")
            return self.cockpit.add_engine(url, host.strip() or default)

        self._ask(PromptScreen(
            "engine: add a /metrics URL", "engine-add",
            placeholder="http://127.0.0.1:30000/metrics [on HOST]",
            help=f"read as seen from the host (default {default}; hosts: {', '.join(hosts)})"),
            add, lambda value, _: f"engine {value.partition(' on ')[0].strip()} joined: "
                                  "scraped once a second")

    def set_prometheus(self) -> None:
        self._ask(PromptScreen(
            "fleet: set the Prometheus URL", "prometheus-set",
            value=self.cockpit.config.fleet.prometheus or "", placeholder="http://127.0.0.1:9090",
            help="the Fleet view's medians and outliers come from here"),
            self.cockpit.set_prometheus,
            lambda _, url: f"Prometheus {url}: the Fleet view (F) reads it")

    def load_pack(self) -> None:
        self._ask(PromptScreen(
            "hypotheses: load a pack", "pack-load", placeholder="a pack file or a bundled name (seed)",
            help="[[hypotheses]] with title, note and check"),
            self.cockpit.load_pack,
            lambda value, added: f"pack {value}: {added} hypotheses added")

    # --- a continued investigation -------------------------------------------------

    def tell_recorded(self) -> None:
        """Once the cockpit has started: what the recording names and this run
        did not start (a toast; the note is in the transcript)."""
        listed = self.cockpit.recorded_only
        if listed:
            shown = "\n".join(r.shown() for r in listed[:8])
            more = f"\n… and {len(listed) - 8} more" if len(listed) > 8 else ""
            self.app.notify(f"named only by the recording, not re-opened:\n{shown}{more}\n"
                            "O re-opens them (each log checked first)",
                            severity="warning", timeout=30)

    def reopen_recorded(self) -> None:
        if not self.cockpit.recorded_only:
            self.app.notify("nothing the recording named waits to be re-opened")
            return

        async def reopen() -> None:
            try:
                said = await self.cockpit.reopen_recorded()
            except JoinError as exc:
                self._failed(exc)
                return
            for line in said:
                self.app.notify(line, severity="warning" if line.startswith("not ") else
                                "information")

        self.app.run_worker(reopen(), exclusive=False, group="grow")

    # --- the config file ---------------------------------------------------------------

    def save_config(self) -> None:
        if self.config_path is None:
            self.app.notify("no config file to save into", severity="warning")
            return
        path = self.config_path
        changes = self._try(lambda: self.cockpit.save_to_config(path))
        if changes is None:
            return
        if not changes:
            self.app.notify("nothing to save: the config has everything that joined")
            return
        self.app.notify(visible(f"saved into {self.config_path}: {'; '.join(changes)}"))
