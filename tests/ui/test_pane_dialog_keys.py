"""Keys typed right behind the key that asks a pane for a dialog belong to
that dialog. A pane cannot push a screen (widgets post a message and the
main screen pushes it a moment later); until then the keys a fast typist
sent after ``/`` would run the pane's own bindings (``e`` = next error)."""

from __future__ import annotations

import asyncio

from perftriage.core.model import events as ev
from perftriage.ui.key_order_workaround import SCREEN_EXPECTED_S
from perftriage.ui.screens.roofline import RooflineScreen
from perftriage.ui.widgets.hypotheses import HypothesesPane
from perftriage.ui.widgets.log_view import LogView
from tests.support.helpers import wait_for
from tests.ui.test_form_keys import typed
from tests.ui.test_logs_pane import make_app


async def _focused_log_view(app, pilot) -> LogView:
    await pilot.pause()
    view = app.screen.query_one(LogView)
    view.focus()
    await pilot.pause()
    return view


async def test_a_burst_behind_slash_is_the_search_not_the_logs_keys(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=(140, 50)) as pilot:
        view = await _focused_log_view(app, pilot)
        jumps: list[int] = []
        next_error = view.action_next_error
        view.action_next_error = lambda step: (jumps.append(step), next_error(step))
        await typed(app, "/err\r")
        assert view.search_text == "err"
        assert jumps == []  # the e of "err" was not "next error"
        await typed(app, "e")  # and afterwards the pane's keys are its own again
        assert jumps == [1]


async def test_a_burst_behind_edit_lands_in_the_hypothesis_form(tmp_path):
    app = make_app(tmp_path)
    app.cockpit.session.emit(ev.HypothesisAdded(hyp_id="h1", title="moe kernel"))
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.pause()
        pane = app.screen.query_one(HypothesesPane)
        pane.query_one("DataTable").focus()
        await pilot.pause()
        await typed(app, "e is slow\x13")  # ctrl+s saves the form
        h = app.cockpit.session.state.hypothesis("h1")
        assert h is not None and h.title == "moe kernel is slow"
        assert h.status == "open"  # the s of "slow" was not the pane's "status"


async def test_a_request_that_shows_nothing_gives_the_keys_back(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=(140, 50)) as pilot:
        view = await _focused_log_view(app, pilot)
        wrap = view.wrap
        app.expect_screen()  # a request whose handler decides to show nothing
        await typed(app, "W", settle=0.1, wait=False)  # held: it waits by design
        assert view.wrap == wrap  # held for the screen that was asked for
        await asyncio.sleep(SCREEN_EXPECTED_S + 0.5)
        await pilot.pause()
        assert view.wrap != wrap  # then run as typed


async def test_esc_then_a_letter_read_as_alt_letter_is_esc_then_the_letter(tmp_path):
    """A terminal sends alt+s as ESC s: Esc then s typed fast (or read late
    by a busy app) arrive as alt+s. Nothing binds alt+letter: it closes the
    keys help, then s steps the hypothesis' status."""
    from textual import events

    from perftriage.ui.screens.keys_help import KeysScreen

    app = make_app(tmp_path)
    app.cockpit.session.emit(ev.HypothesisAdded(hyp_id="h1", title="moe kernel"))
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.pause()
        app.screen.query_one(HypothesesPane).query_one("DataTable").focus()
        await pilot.pause()
        await pilot.press("question_mark")
        assert isinstance(app.screen, KeysScreen)
        app.post_message(events.Key("alt+s", "s"))  # as the xterm parser reports ESC s
        await pilot.pause(0.3)
        assert not isinstance(app.screen, KeysScreen)
        h = app.cockpit.session.state.hypothesis("h1")
        assert h is not None and h.status != "open"


async def test_a_burst_behind_g_fills_the_gap_form_field_by_field(tmp_path):
    """Tab in the gap form bubbled to the App and ran after the digits typed
    behind it: every figure ended up in the first field."""
    app = make_app(tmp_path)
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.pause()
        await typed(app, "G16\t\t\t\t\t4800\r")
        gaps = app.cockpit.session.state.gaps
        # a loaded box may still be running the burst: wait for the form to close
        await wait_for(lambda: gaps or not isinstance(app.screen, RooflineScreen), timeout=15)
        assert gaps, "nothing recorded: the form is still open or the inputs were refused"
        inputs = gaps[-1].inputs
        assert (inputs["weights_gb"], inputs["gpus"], inputs["bandwidth_gbs"]) == (16.0, 1, 4800.0)
