"""`perftriage demo`: the simulated server starts, its log is followed and
plotted, example probes are queued, and quitting leaves no simulator."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.demo import fast_demo
from tests.support.helpers import wait_for
from perftriage.cli.globals import Globals, UsageFailure
from perftriage.core.store import investigations as inv
from perftriage.ui.app import PerftriageApp
from perftriage.cli.commands.demo import DEMO_SERVER, build, start_demo
from perftriage.ui.widgets.logs import LogsPane


def sims(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-ewwo", "pid,args"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if "sglang_sim" in ln and marker in ln]


async def test_demo_every_pane_alive(tmp_path) -> None:
    cockpit = fast_demo(tmp_path)
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


async def test_demo_is_a_named_investigation_with_its_packs(tmp_path) -> None:
    """`demo -s NAME --hypotheses seed`: recorded as the investigation NAME in
    the sessions directory, the pack's hypotheses in it; a second run
    continues it (a new segment, no duplicate hypotheses)."""
    sessions = tmp_path / "sessions"
    g = Globals(sessions_dir=sessions, session="moe demo", hypotheses=["seed"])
    first = build(g, 8.0, tmp_path)
    titles = [h.title for h in first.session.state.hypotheses]
    assert first.session.state.name == "moe demo" and len(titles) >= 5
    assert first.session.path == inv.path_for("moe demo", sessions)
    with pytest.raises(UsageFailure, match="moe demo"):  # one cockpit per name
        build(g, 8.0, tmp_path)
    first.session.close("quit")
    again = build(g, 8.0, tmp_path)
    assert [h.title for h in again.session.state.hypotheses] == titles
    again.session.close("quit")


def test_demo_without_a_name_records_in_the_sessions_dir(tmp_path) -> None:
    cockpit = build(Globals(sessions_dir=tmp_path / "sessions"), 8.0, tmp_path)
    assert cockpit.session.path.parent == tmp_path / "sessions"
    cockpit.session.close("quit")
