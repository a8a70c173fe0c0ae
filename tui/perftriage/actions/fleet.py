"""Fleet keys: ``F`` opens the Fleet view (Prometheus: hosts x GPUs, fleet
medians, ranked outliers; enter digs into a host over SSH), ``=`` folds the
selected fan-out's answers by node set (the latest fan-out when the selected
probe is not one). Self-contained: it needs only the app's ``cockpit``,
``session`` and the Probes pane's ``selected_probe_id``."""

from __future__ import annotations

from textual.binding import Binding

from perftriage.screens.fanout import FanoutScreen
from perftriage.screens.fleet import FleetScreen


class FleetActions:
    BINDINGS = [
        Binding("F", "fleet", "Fleet", id="fleet.open",
                tooltip="Fleet view from Prometheus: medians, outliers; enter digs in over SSH"),
        Binding("equals_sign", "fanout_folded", "Fold fan-out", id="fleet.fanout",
                tooltip="The selected fan-out's answers folded by node set, like clubak"),
    ]
    PROVIDERS: tuple = ()

    def action_fleet(self) -> None:
        def dug(host: str | None) -> None:
            if host is not None:
                self.notify(f"{host}: connecting over SSH; probes and logs can target it now")

        self.push_screen(FleetScreen(), dug)  # type: ignore[attr-defined]

    def action_fanout_folded(self) -> None:
        probes = self.session.state.probes  # type: ignore[attr-defined]
        pid = self.selected_probe_id()  # type: ignore[attr-defined]
        group = probes[pid].group if pid in probes else None
        if group is None:
            group = next((p.group for p in reversed(probes.values()) if p.group), None)
        if group is None:
            self.notify("no fan-out yet: press a to run the next probe on all hosts")  # type: ignore[attr-defined]
            return
        self.push_screen(FanoutScreen(group))  # type: ignore[attr-defined]
