"""``perftriage demo``: ``P`` then ``c`` with the form's defaults fills the
Profile view from the SIMULATED SGLang server (its bundled real traces, 8
ranks), with no GPU and nothing typed but Enter."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from perftriage.cli.commands.demo import DEMO_SERVER, SIMULATED_GPUS, start_demo
from perftriage.ui.app import PerftriageApp
from perftriage.ui.screens.profile import ProfileScreen
from tests.support.demo import fast_demo
from tests.support.helpers import wait_for


async def test_p_c_in_the_demo_fills_the_profile_view(tmp_path: Path) -> None:
    cockpit = fast_demo(tmp_path)
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 45)) as pilot:
        await start_demo(cockpit)
        state = cockpit.session.state
        await wait_for(lambda: any(e.server == DEMO_SERVER and e.state == "ready"
                                   for e in state.server_events), timeout=30)
        await pilot.press("P")
        await wait_for(lambda: isinstance(app.screen, ProfileScreen))
        await pilot.press("c")
        await wait_for(lambda: app.screen.__class__.__name__ == "PromptScreen")
        await pilot.press("enter")  # the form's defaults: the demo server's URL
        await wait_for(lambda: len(state.profiles) == 1, timeout=40)
        screen = app.screen
        assert isinstance(screen, ProfileScreen)
        await wait_for(lambda: screen.query_one("#profile-kernels", DataTable).row_count > 5)
        head = str(screen.query_one("#profile-head").render())
        assert f"{SIMULATED_GPUS[0]} rank(s)" in head
        await pilot.press("escape")
    assert state.profiles[0].engine == "sglang" and state.profiles[0].missing == []
