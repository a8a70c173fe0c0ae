"""The Logs pane's wrap toggle (``W``): long lines wrap onto as many screen
lines as they need, or are cut with left/right scrolling; the choice is kept
per pane while the app runs (tabs, a rebuilt view, the probe output view
keeps its own)."""

from __future__ import annotations

from textual.widgets import TextArea

from perftriage.ui.app import PerftriageApp
from perftriage.core.model import events as ev
from perftriage.core.model.state import SessionState
from perftriage.core.view.log_window import ALL, LogIndex
from perftriage.core.view.log_wrap import WrapMap
from perftriage.ui.screens.probe_output import ProbeOutputScreen
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry, local_host
from perftriage.ui.widgets.log_view import LogView
from perftriage.ui.widgets.logs import LogsPane
from tests.support.helpers import replay_app, wait_for

LONG = "W" * 150 + " TAIL-OF-THE-LONG-LINE"  # 172 cells: 3 screen lines at width 60+


def _state(lines: list[str], ring: int = 100) -> SessionState:
    state = SessionState()
    state.log_ring = ring
    from perftriage.core.model.reducer import apply
    apply(state, ev.LogSourceOpened(source_id="a", host="localhost", path="/x/a.log"))
    apply(state, ev.LogLines(source_id="a", lines=lines))
    return state


def test_wrap_map_counts_rows_and_locates_screen_lines() -> None:
    state = _state(["short", "x" * 25, "y" * 10])
    index = LogIndex(state, "a")
    index.set_filters()
    wm = WrapMap()
    wm.sync(index, 10, lambda key, text: len(text))
    assert wm.height(index) == 1 + 3 + 1
    assert [wm.locate(index, y) for y in range(5)] == [(0, 0), (1, 0), (1, 1), (1, 2), (2, 0)]
    assert wm.locate(index, 5) is None
    assert wm.y_of(index, 2) == 4
    # new lines are counted incrementally; a width change recounts
    from perftriage.core.model.reducer import apply
    apply(state, ev.LogLines(source_id="a", lines=["z" * 21]))
    index.refresh()
    wm.sync(index, 10, lambda key, text: len(text))
    assert wm.height(index) == 8
    wm.sync(index, 30, lambda key, text: len(text))
    assert wm.height(index) == 4


def test_wrap_map_follows_the_ring_and_a_rebuilt_index() -> None:
    state = _state(["a" * 20] * 4, ring=4)  # 2 screen lines each at width 10
    index = LogIndex(state, "a")
    index.set_filters()
    wm = WrapMap()
    cells = lambda key, text: len(text)  # noqa: E731
    wm.sync(index, 10, cells)
    assert wm.height(index) == 8
    from perftriage.core.model.reducer import apply
    apply(state, ev.LogLines(source_id="a", lines=["b"] * 3))  # 3 long lines leave the ring
    index.refresh()
    wm.sync(index, 10, cells)
    assert wm.height(index) == 2 + 3 and wm.locate(index, 0) == (0, 0)
    assert wm.locate(index, 2) == (1, 0)
    index.set_filters("b")  # a rebuild: counted again from its rows
    wm.sync(index, 10, cells)
    assert wm.height(index) == 3


def _app(tmp_path) -> PerftriageApp:
    reg = HostRegistry()
    reg.add(local_host())
    cockpit = Cockpit(registry=reg, sessions_dir=tmp_path, sample_interval=30)
    s = cockpit.session
    s.emit(ev.LogSourceOpened(source_id="log1", host="localhost", path="/var/log/a.log"))
    s.emit(ev.LogLines(source_id="log1", lines=[f"INFO short {i}" for i in range(5)]
                       + [LONG] + ["INFO after"]))
    return PerftriageApp(cockpit)


def _screen_text(view: LogView) -> list[str]:
    return [view.render_line(y).text for y in range(view.size.height)]


async def test_w_wraps_long_lines_and_cuts_them_again(tmp_path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.screen.query_one(LogsPane)
        view = pane.view
        await wait_for(lambda: len(view.index) == 7)
        view.focus()
        await pilot.pause()
        width = view.size.width
        assert width < len(LONG)
        # cut: the long line takes one screen line, its tail is off to the right
        assert view.virtual_size.height == 7 and view.virtual_size.width >= len(LONG)
        assert not any("TAIL-OF-THE-LONG-LINE" in t for t in _screen_text(view))
        await pilot.press("W")
        await pilot.pause()
        assert view.wrap and app.view_prefs.wrap == {"logs": True}
        # wrapped: the long line (with its "a.log " label in the merged view) takes its lines
        label = len("a.log ")
        width = view.wrap_width  # the view less its scrollbar
        extra = -(-(len(LONG) + label) // width) - 1
        assert view.virtual_size.height == 7 + extra
        assert view.virtual_size.width == width  # nothing to scroll sideways
        # the tail is on screen now, split where the width ends
        joined = "".join(_screen_text(view)).replace(" ", "")
        assert "W" * 150 + "TAIL-OF-THE-LONG-LINE" in joined
        assert "wrapped" in view.status()
        # the error jump, search and n keep working on rows: the wrapped line is one row
        await pilot.press("slash")
        for ch in "after":
            await pilot.press(ch)
        await pilot.press("enter")
        await pilot.pause()
        assert view.index.row(view.cursor)[1] == "INFO after"
        # cut again: one screen line per row, scrolling sideways shows the tail
        await pilot.press("W")
        await pilot.pause()
        assert not view.wrap and app.view_prefs.wrap == {"logs": False}
        assert view.virtual_size.height == 7
        view.scroll_to(x=view.max_scroll_x, animate=False, immediate=True)
        await pilot.pause()
        assert any("TAIL-OF-THE-LONG-LINE" in t for t in _screen_text(view))
        await pilot.press("q")


async def test_wrap_is_kept_across_tabs_and_per_pane(tmp_path) -> None:
    app = _app(tmp_path)
    app.session.emit(ev.ProbeQueued(probe_id="p1", host="localhost", kind="shell",
                                    args=["echo"], command="echo"))
    app.session.emit(ev.ProbeOutput(probe_id="p1", stream="stdout", data=LONG))
    app.session.emit(ev.ProbeFinished(probe_id="p1", status="ok", exit_status=0,
                                      duration_s=0.1, summary="done"))
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.screen.query_one(LogsPane)
        view = pane.view
        await wait_for(lambda: len(view.index) == 7)
        view.focus()
        await pilot.press("W")
        await pilot.press("right_square_bracket")  # the log1 tab: a new index, same choice
        await pilot.pause()
        assert pane.selected == "log1" and view.wrap
        assert view.virtual_size.height > 7  # wrapped in the new tab too
        # the probe output view keeps its own choice, apart from the Logs pane's
        app.push_screen(ProbeOutputScreen("p1"))
        await pilot.pause()
        area = app.screen.query_one(TextArea)
        assert not area.soft_wrap
        await pilot.press("W")
        assert area.soft_wrap and app.view_prefs.wrap == {"logs": True, "probe_output": True}
        await pilot.press("escape")
        await pilot.pause()
        app.push_screen(ProbeOutputScreen("p1"))  # a new view remembers it
        await pilot.pause()
        assert app.screen.query_one(TextArea).soft_wrap
        await pilot.press("escape")
        # a new log view (a rebuilt screen) starts wrapped
        fresh = LogView(app.session.state, ALL, id="fresh")
        await pane.mount(fresh)
        assert fresh.wrap
        await pilot.press("q")


def test_logs_zoomed_and_wrapped_snapshot(snap_compare):
    async def wrap(pilot):
        await pilot.press("3", "z", "W")
        await pilot.pause(0.3)

    assert snap_compare(replay_app(), terminal_size=(100, 30), run_before=wrap)
