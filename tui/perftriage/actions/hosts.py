"""Hosts keys: ``p`` toggles the power sparkline next to utilisation
(utilisation reads 100% even when a GPU is starved; power tells more),
``D`` (or enter on the Hosts pane) opens the detail view of a host:
processes per GPU, clocks, throttle reasons and the ``topo -m`` matrix."""

from __future__ import annotations

from textual.binding import Binding

from perftriage.actions.base import ActionsMixin
from perftriage.screens.host_detail import HostDetailScreen
from perftriage.widgets.hosts import HostsPane


class HostsActions(ActionsMixin):
    BINDINGS = [
        Binding("p", "hosts_power", "Power", id="hosts.power",
                tooltip="Show the power sparkline beside utilisation in the Hosts pane"),
        Binding("D", "host_detail", "Host detail", id="hosts.detail",
                tooltip="Processes per GPU, clocks, throttle reasons and nvidia-smi topo -m"),
    ]

    def hosts_pane(self) -> HostsPane | None:
        return self.pane(HostsPane)

    def action_hosts_power(self) -> None:
        pane = self.hosts_pane()
        if pane is None:
            return
        on = pane.toggle_power()
        self.notify(f"power sparkline {'on' if on else 'off'}")  # type: ignore[attr-defined]

    def action_host_detail(self, host: str | None = None) -> None:
        names = list(self.session.state.hosts)
        if not names:
            self.notify("no hosts", severity="warning")  # type: ignore[attr-defined]
            return
        pane = self.hosts_pane()
        name = host or (pane.selected_host if pane is not None and pane.selected_host else names[0])
        self.push_screen(HostDetailScreen(name))  # type: ignore[attr-defined]
