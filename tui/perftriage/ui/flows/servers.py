"""Logs and servers from the keyboard: follow a log file on any host
(``o``), start / restart (``S``) and stop (``K``) an inference server from
its ``[[servers]]`` profile. Viewing keys (search, filters, error jumps,
follow) belong to the log view itself (``perftriage.ui.widgets.log_view``)."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App

from perftriage.ui.screens.prompt import PromptScreen
from perftriage.services.cockpit import Cockpit
from perftriage.services.logs.server_launcher import LaunchError, parse_overrides, placeholders
from perftriage.ui.widgets.logs import LogsPane


def split_host_path(value: str, hosts: list[str], default: str) -> tuple[str, str]:
    """``host:/path`` when ``host`` is a known host, else a path on ``default``."""
    head, sep, tail = value.partition(":")
    if sep and head in hosts and tail:
        return head, tail
    return default, value


class ServerFlows:
    def __init__(self, app: App, cockpit: Cockpit,
                 pane: Callable[[], LogsPane | None]) -> None:
        self.app = app
        self.cockpit = cockpit
        self._pane = pane

    def open_log(self) -> None:
        hosts = list(self.cockpit.registry.names)
        default = hosts[0] if hosts else "localhost"

        def validate(value: str) -> str | None:
            host, path = split_host_path(value, hosts, default)
            return None if path.strip() else "enter a path"

        def opened(value: str | None) -> None:
            if value is None:
                return
            host, path = split_host_path(value, hosts, default)
            sid = self.cockpit.logs.open_file(host, path)
            if (pane := self._pane()) is not None:
                pane.select(sid)  # once its tab shows

        self.app.push_screen(
            PromptScreen("logs: follow a file", "log-open", placeholder="[host:]/path/to/server.log",
                         help=f"hosts: {', '.join(hosts)} (default {default})", validate=validate),
            opened,
        )

    def start_server(self) -> None:
        launcher = self.cockpit.servers
        names = list(launcher.profiles)
        if not names:
            self.app.notify("no [[servers]] profiles in the config", severity="warning")
            return
        first = launcher.profiles[names[0]]
        hint = " ".join(f"{p}={first.args.get(p, '?')}" for p in placeholders(first.command))

        def validate(value: str) -> str | None:
            name, _, rest = value.partition(" ")
            if name not in launcher.profiles:
                return f"unknown server {name!r}; known: {', '.join(names)}"
            try:
                parse_overrides(rest, placeholders(launcher.profiles[name].command))
            except LaunchError as exc:
                return str(exc)
            return None

        async def go(name: str, rest: str) -> None:
            try:
                if launcher.running(name):
                    await launcher.restart(name, rest)
                else:
                    launcher.start(name, rest)
            except LaunchError as exc:
                self.app.notify(str(exc), severity="error")

        def submitted(value: str | None) -> None:
            if value is None:
                return
            name, _, rest = value.partition(" ")
            self.app.run_worker(go(name, rest.strip()), group="servers")

        self.app.push_screen(
            PromptScreen("server: start / restart", "server-start", value=names[0] + " ",
                         placeholder=f"{names[0]} {hint} --extra-flag value",
                         help=f"profiles: {', '.join(names)}; name=value sets a placeholder, "
                              "other words are extra arguments for this run",
                         validate=validate),
            submitted,
        )

    def stop_servers(self) -> None:
        launcher = self.cockpit.servers
        running = [n for n in launcher.runs if launcher.running(n)]
        if not running:
            self.app.notify("no server running", severity="warning")
            return
        for name in running:
            self.app.run_worker(launcher.stop(name), group="servers")
        self.app.notify(f"stopping {', '.join(running)}")
