"""`perftriage demo`: the simulated server starts, its log is followed and
plotted, example probes are queued, and quitting leaves no simulator."""

from __future__ import annotations

import subprocess

from tests.support.helpers import wait_for
from perftriage.ui.app import PerftriageApp
from perftriage.cli.commands.demo import DEMO_SERVER, build, start_demo
from perftriage.ui.widgets.logs import LogsPane


def sims(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-ewwo", "pid,args"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if "sglang_sim" in ln and marker in ln]


async def test_demo_every_pane_alive(tmp_path) -> None:
    cockpit = build(tmp_path / "sessions", 40.0, tmp_path)
    cockpit.config.servers[0].args["startup"] = "0.05"
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 50)) as pilot:
        await start_demo(cockpit)
        state = cockpit.session.state
        await wait_for(lambda: state.servers.get(DEMO_SERVER) is not None
                       and state.servers[DEMO_SERVER].state == "ready", timeout=20)
        assert state.servers[DEMO_SERVER].time_to_ready_s is not None
        assert len(state.probes) >= 2
        src = next(s for s in state.logs.values() if s.kind == "server")
        await wait_for(lambda: len(src.metrics.gen_tps) >= 3, timeout=20)
        pane = app.screen.query_one(LogsPane)
        await wait_for(lambda: "tok/s" in str(pane.query_one("#logs-metrics").render()))
        assert sims(str(tmp_path))
        await pilot.press("q")
    await wait_for(lambda: not sims(str(tmp_path)), timeout=5)
    assert (tmp_path / "sglang-sim.log").read_text().count("Decode batch") >= 3
