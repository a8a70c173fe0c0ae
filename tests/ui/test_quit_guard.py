"""q asks once while probes run or a form has text; Home/End select the
first and last row of the Probes and Hypotheses tables."""

from __future__ import annotations

from perftriage.ui.app import PerftriageApp
from perftriage.ui.screens.hypothesis_form import HypothesisFormScreen
from perftriage.ui.screens.quit_guard import QuitConfirmScreen
from perftriage.services.cockpit import Cockpit
from perftriage.ui.widgets.hypotheses import HypothesesPane
from perftriage.ui.widgets.probes import ProbesPane

from tests.support.helpers import wait_for


def _live_app(tmp_path):
    return PerftriageApp(Cockpit(sessions_dir=tmp_path, sample_interval=0.1))


async def test_q_with_a_probe_running_asks_and_q_again_quits(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("exclamation_mark", *"sleep 30", "enter")
        await wait_for(lambda: any(p.status == "running"
                                   for p in app.session.state.probes.values()))
        await pilot.press("q")
        await wait_for(lambda: isinstance(app.screen, QuitConfirmScreen))
        assert "1 probe still running" in str(app.screen.question)
        await pilot.press("n")  # stays
        await wait_for(lambda: not isinstance(app.screen, QuitConfirmScreen))
        assert app.return_code is None
        await pilot.press("q")
        await wait_for(lambda: isinstance(app.screen, QuitConfirmScreen))
        await pilot.press("q")
        await wait_for(lambda: app.return_code == 0)
    assert app.session.state.ended


async def test_quit_from_a_form_with_text_asks_and_y_quits(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("H")
        await wait_for(lambda: isinstance(app.screen, HypothesisFormScreen))
        await pilot.press(*"half typed")
        await pilot.press("ctrl+q")  # q itself would be typed into the field
        await wait_for(lambda: isinstance(app.screen, QuitConfirmScreen))
        assert "a form has text" in str(app.screen.question)
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, HypothesisFormScreen))
        assert app.screen.query_one("#hyp-title").value == "half typed"  # nothing lost
        await pilot.press("ctrl+q")
        await wait_for(lambda: isinstance(app.screen, QuitConfirmScreen))
        await pilot.press("y")
        await wait_for(lambda: app.return_code == 0)


async def test_q_with_nothing_in_flight_quits_at_once(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("q")
        await wait_for(lambda: app.return_code == 0)


async def test_home_and_end_select_first_and_last_rows(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        for title in ("one", "two", "three"):
            await pilot.press("H", *title, "ctrl+s")
        for module in ("json", "csv", "re"):
            await pilot.press("i", *module, "enter")
        hyps = app.screen.query_one(HypothesesPane)
        probes = app.screen.query_one(ProbesPane)
        await wait_for(lambda: hyps.table.row_count == 3 and probes.table.row_count == 3)
        await wait_for(lambda: all(p.finished for p in app.session.state.probes.values()))
        for pane, key in ((hyps, "4"), (probes, "2")):
            await pilot.press(key, "home")
            await wait_for(lambda pane=pane: pane.table.cursor_row == 0)
            await pilot.press("end")
            await wait_for(lambda pane=pane: pane.table.cursor_row == 2)
            await pilot.press("home")
            await wait_for(lambda pane=pane: pane.table.cursor_row == 0)
        await pilot.press("q")
