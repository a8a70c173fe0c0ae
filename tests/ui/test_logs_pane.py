"""Pilot tests of the Logs pane: search, filters, error jumps, follow, tabs."""

from __future__ import annotations

from tests.support.helpers import wait_for
from perftriage.ui.app import PerftriageApp
from perftriage.core.model import events as ev
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry, local_host
from perftriage.ui.screens.prompt import PromptScreen
from perftriage.ui.widgets.log_view import LogView
from perftriage.ui.widgets.logs import LogsPane

SG = ("[2026-11-28 09:16:06 TP0] Decode batch, #running-req: 1, #token: 852, token usage: 0.00, "
      "cuda graph: True, gen throughput (token/s): {tps}, #queue-req: 0")


def make_app(tmp_path) -> PerftriageApp:
    reg = HostRegistry()
    reg.add(local_host())
    cockpit = Cockpit(registry=reg, sessions_dir=tmp_path, sample_interval=30)
    s = cockpit.session
    s.emit(ev.LogSourceOpened(source_id="log1", host="localhost", path="/var/log/a.log"))
    s.emit(ev.LogSourceOpened(source_id="log2", host="localhost", path="/var/log/b.log"))
    lines = [f"INFO request {i}" for i in range(200)]
    lines[50] = "Traceback (most recent call last):"
    lines[120] = "torch.OutOfMemoryError: CUDA out of memory"
    lines[150] = SG.format(tps=250.0)
    s.emit(ev.LogLines(source_id="log1", lines=lines))
    s.emit(ev.LogLines(source_id="log2", lines=["other source line", "WARNING careful"]))
    return PerftriageApp(cockpit)


async def type_text(pilot, text: str) -> None:
    for ch in text:
        await pilot.press(ch if ch != " " else "space")


async def test_search_filter_error_keys(tmp_path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(140, 50)) as pilot:
        pane = app.screen.query_one(LogsPane)
        view = pane.view
        await wait_for(lambda: len(view.index) == 202)
        view.focus()
        await pilot.pause()
        assert view.follow
        # the fixture's logs were opened before the cockpit started, as a continued
        # recording's are: the cockpit's one note says it did not re-open them
        notes = list(app.session.state.notes)
        assert [n.text.startswith("not re-opened, named only by the recording") for n in notes] == [True]
        # search: / regex Enter, n / N move between matches (N is not the app's note here)
        await pilot.press("slash")
        await type_text(pilot, "request 1[0-9]$")
        await pilot.press("enter")
        await pilot.pause()
        assert len(view.index.matches) == 10 and "of 10" in view.status()
        assert not view.follow
        first = view.cursor
        await pilot.press("n")
        assert view.cursor != first
        await pilot.press("N")
        assert view.cursor == first
        # N did not open the note form, nor add a note
        assert not isinstance(app.screen, PromptScreen)
        assert app.session.state.notes == notes
        # error jumps
        await pilot.press("e")
        err1 = view.cursor
        await pilot.press("e")
        assert {view.index.row(err1)[1], view.index.row(view.cursor)[1]} == {
            "Traceback (most recent call last):", "torch.OutOfMemoryError: CUDA out of memory"}
        # filter in, then filter out, without losing lines
        await pilot.press("f")  # starts from the search: replace it
        await pilot.pause()
        assert app.screen.query_one("#prompt-input").value == view.search_text
        await pilot.press("ctrl+u")
        await type_text(pilot, "request")
        await pilot.press("enter")
        await pilot.pause()
        assert len(view.index) == 197
        await pilot.press("F")
        await type_text(pilot, "request [0-9]$")
        await pilot.press("enter")
        await pilot.pause()
        assert len(view.index) == 187
        await pilot.press("c")
        assert len(view.index) == 202
        # End resumes following
        await pilot.press("end")
        assert view.follow
        # tabs: switch to the first source; metrics line shows its throughput
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert pane.selected == "log1" and len(pane.view.index) == 200
        metrics = str(pane.query_one("#logs-metrics").render())
        assert "250.0" in metrics and "4.00" in metrics  # ms/tok at batch 1
        await pilot.press("q")


async def test_scrolling_up_pauses(tmp_path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        view = app.screen.query_one(LogView)
        await wait_for(lambda: len(view.index) == 202)
        view.focus()
        await pilot.pause()
        await pilot.press("pageup")
        await pilot.pause()
        assert not view.follow
        app.session.emit(ev.LogLines(source_id="log2", lines=["new"]))
        await wait_for(lambda: len(view.index) == 203)
        await pilot.press("end")
        assert view.follow
        await pilot.press("q")


async def test_no_log_source_says_how_to_open_one_and_claims_no_following(tmp_path) -> None:
    reg = HostRegistry()
    reg.add(local_host())
    app = PerftriageApp(Cockpit(registry=reg, sessions_dir=tmp_path, sample_interval=30))
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.pause()
        pane = app.screen.query_one(LogsPane)
        status = pane.query_one("#logs-status")
        assert str(pane.query_one("#logs-metrics").render()) == "no log sources — o opens a log file"
        assert str(status.render()) == ""  # not "following · 0 lines"
        app.cockpit.session.emit(ev.LogSourceOpened(source_id="log1", host="localhost",
                                                    path="/var/log/a.log"))
        app.cockpit.session.emit(ev.LogLines(source_id="log1", lines=["one", "two"]))
        await wait_for(lambda: "2 lines" in str(status.render()))


async def test_a_server_whose_log_is_followed_already_gets_no_second_tab(tmp_path) -> None:
    """A server started (or restarted) from the cockpit writes a log the host
    follows already: its stream carries the guard's marks only and its lines
    are the follow's, so one file is one tab (not a second, empty
    ``host:server.log``)."""
    from textual.widgets import Tabs

    app = make_app(tmp_path)
    s = app.cockpit.session
    s.emit(ev.LogSourceOpened(source_id="log3", host="localhost", path="sim: /var/log/a.log",
                              kind="server", shown_in="log1"))
    async with app.run_test(size=(140, 50)) as pilot:
        pane = app.screen.query_one(LogsPane)
        await wait_for(lambda: "log2" in pane._sources)
        await pilot.pause()
        assert pane._sources == ["log1", "log2"]
        labels = [str(t.label) for t in pane.query_one("#logs-tabs", Tabs).query("Tab")]
        assert labels.count("a.log") == 1, labels
        # a restart emits it again (the same source): still no tab of its own
        s.emit(ev.LogSourceOpened(source_id="log3", host="localhost",
                                  path="sim: /var/log/a.log", kind="server", shown_in="log1"))
        await pilot.pause(0.3)
        assert pane._sources == ["log1", "log2"]
