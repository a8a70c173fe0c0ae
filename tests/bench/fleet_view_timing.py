"""How long the Fleet view takes to draw one refresh (used by bench_fleet):
``render_fleet`` on the mounted screen (tables filled, node sets folded)
plus the frame that paints it, headless at 160x45."""

from __future__ import annotations

import statistics
import time

from perftriage.ui.app import PerftriageApp
from perftriage.ui.screens.fleet import FleetScreen
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.sources.fleet import FleetSource


async def render_ms(snapshot, summary, repeat: int) -> float:
    cockpit = Cockpit(registry=HostRegistry())
    source = FleetSource(cockpit.session, "http://127.0.0.1:9")
    source.snapshot, source.summary = snapshot, summary
    app = PerftriageApp(cockpit)
    times = []
    async with app.run_test(size=(160, 45)) as pilot:
        screen = FleetScreen(source)
        app.push_screen(screen)
        await pilot.pause()
        for _ in range(repeat):
            t0 = time.perf_counter()
            screen.render_fleet(snapshot, summary)
            await pilot.pause()
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000
