"""Logs and server keys: open a log file on any host, start / restart / stop
an inference server from its profile. Viewing keys (search, filters, error
jumps, follow) live on the log widget itself (tui/perftriage/widgets/log_view.py) so
they take precedence only while it has focus."""

from __future__ import annotations

from textual.binding import Binding

from perftriage.actions.base import ActionsMixin
from perftriage.screens.prompt import PromptScreen
from perftriage.services.server_launcher import LaunchError, parse_overrides, placeholders


def split_host_path(value: str, hosts: list[str], default: str) -> tuple[str, str]:
    """``host:/path`` when ``host`` is a known host, else a path on ``default``."""
    head, sep, tail = value.partition(":")
    if sep and head in hosts and tail:
        return head, tail
    return default, value


class LogsActions(ActionsMixin):
    BINDINGS = [
        Binding("o", "log_open", "Open log", id="logs.open"),
        Binding("S", "server_start", "Server", id="server.start"),
        Binding("K", "server_stop", "Stop server", id="server.stop"),
        Binding("ctrl+w", "log_close", "Close log", show=False, id="logs.close"),
    ]

    def _logs_pane(self):
        from perftriage.widgets.logs import LogsPane

        return self.pane(LogsPane)

    def action_log_open(self) -> None:
        if self.refuse_in_replay():
            return
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
            self.refresh_panes()  # type: ignore[attr-defined]
            if (pane := self._logs_pane()) is not None:
                self.call_after_refresh(pane.select, sid)  # type: ignore[attr-defined]

        self.push_screen(  # type: ignore[attr-defined]
            PromptScreen("logs: follow a file", "log-open", placeholder="[host:]/path/to/server.log",
                         help=f"hosts: {', '.join(hosts)} (default {default})", validate=validate),
            opened,
        )

    def action_log_close(self) -> None:
        if self.refuse_in_replay():
            return
        pane = self._logs_pane()
        if pane is None or pane.selected == "*":
            self.notify("select a log tab to close it", severity="warning")  # type: ignore[attr-defined]
            return
        self.run_worker(self.cockpit.logs.close(pane.selected, "closed by user"),  # type: ignore[attr-defined]
                        group="logs")

    def action_server_start(self) -> None:
        if self.refuse_in_replay():
            return
        launcher = self.cockpit.servers
        names = list(launcher.profiles)
        if not names:
            self.notify("no [[servers]] profiles in the config", severity="warning")  # type: ignore[attr-defined]
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
                self.notify(str(exc), severity="error")  # type: ignore[attr-defined]
            self.refresh_panes()  # type: ignore[attr-defined]

        def submitted(value: str | None) -> None:
            if value is None:
                return
            name, _, rest = value.partition(" ")
            self.run_worker(go(name, rest.strip()), group="servers")  # type: ignore[attr-defined]

        self.push_screen(  # type: ignore[attr-defined]
            PromptScreen("server: start / restart", "server-start", value=names[0] + " ",
                         placeholder=f"{names[0]} {hint} --extra-flag value",
                         help=f"profiles: {', '.join(names)}; name=value sets a placeholder, "
                              "other words are extra arguments for this run",
                         validate=validate),
            submitted,
        )

    def action_server_stop(self) -> None:
        if self.refuse_in_replay():
            return
        launcher = self.cockpit.servers
        running = [n for n in launcher.runs if launcher.running(n)]
        if not running:
            self.notify("no server running", severity="warning")  # type: ignore[attr-defined]
            return
        for name in running:
            self.run_worker(launcher.stop(name), group="servers")  # type: ignore[attr-defined]
        self.notify(f"stopping {', '.join(running)}")  # type: ignore[attr-defined]
