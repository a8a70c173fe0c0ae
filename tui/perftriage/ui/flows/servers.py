"""Logs and servers from the keyboard: follow a log file on any host
(``o``), start / restart (``S``) and stop (``K``) an inference server from
its ``[[servers]]`` profile. Viewing keys (search, filters, error jumps,
follow) belong to the log view itself (``perftriage.ui.widgets.log_view``)."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import App

from perftriage.ui.screens.prompt import PromptScreen
from perftriage.services.cockpit import Cockpit
from perftriage.services.logs.server_launcher import (
    LaunchError,
    ServerLauncher,
    parse_overrides,
    placeholders,
)
from perftriage.ui.widgets.logs import LogsPane


def split_host_path(value: str, hosts: list[str], default: str) -> tuple[str, str]:
    """``host:/path`` when ``host`` is a known host, else a path on ``default``."""
    head, sep, tail = value.partition(":")
    if sep and head in hosts and tail:
        return head, tail
    return default, value


HELP_WIDTH = 72  # the form's help lines are cut, not wrapped: wrapped here


def restart_help(launcher: ServerLauncher, names: list[str]) -> Text:
    """What ``S`` can change, per profile: its state, each placeholder with
    its current value (the last run's; ``(profile: …)`` where that run set
    another than the profile's) and the last run's extra arguments. Text, not
    markup: the values come from the config and the command line."""
    out = Text()
    for name in names:
        profile = launcher.profiles[name]
        run = launcher.runs.get(name)
        set_now = run.values if run is not None else {}
        state = run.state if run is not None else "not started"
        words = [Text.assemble((name, "bold"), f" ({state} on {profile.host}):")]
        for key, value in launcher.current_values(name).items():
            word = Text.assemble(f"{key}=", (value, "bold" if key in set_now else ""))
            if key in set_now and profile.args.get(key) != value:
                word.append(f" (profile: {profile.args.get(key, '?')})", style="dim")
            words.append(word)
        extra = " ".join(run.extra) if run is not None and run.extra else "none"
        words.append(Text(f"last run's extra arguments: {extra}"))
        out.append_text(_wrapped(words))
        out.append("\n")
    out.append("name=value sets a placeholder for this run (the others: the profile's);\n"
               "other words are extra arguments for this run")
    return out


def _wrapped(words: list[Text], width: int = HELP_WIDTH) -> Text:
    """``words`` on lines of at most ``width`` cells (a longer word on a line
    of its own), the lines after the first indented by two."""
    out, col = Text(), 0
    for word in words:
        if col and col + 1 + word.cell_len > width:
            out.append("\n  ")
            col = 2
        elif col:
            out.append(" ")
            col += 1
        out.append_text(word)
        col += word.cell_len
    return out


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
        # the running one first: S is most often a restart with one value changed
        names.sort(key=lambda n: not launcher.running(n))
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
                         help=restart_help(launcher, names), validate=validate),
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
