"""Triage at the keyboard, in the cockpit: zoom and direct focus keys, the
result column and the selected probe whole, ``x`` cancels the probe meant,
the default probe host, "+N more" GPUs on a short pane, the output view on
the result, removing a probe, undoing a hypothesis edit."""

from __future__ import annotations

from perftriage.ui.app import PerftriageApp
from perftriage.core.model import events as ev
from perftriage.core.model.state import ProbeState, SessionState
from perftriage.ui.probe_target import ProbeTarget
from perftriage.ui.screens.probe_output import ProbeOutputScreen
from perftriage.services.cockpit import Cockpit
from perftriage.ui.widgets.hosts import HostsPane
from perftriage.ui.widgets.probes import ProbesPane, cancel_target

from tests.support.helpers import replay_app, wait_for


def _live_app(tmp_path):
    return PerftriageApp(Cockpit(sessions_dir=tmp_path, sample_interval=0.1))


async def test_zoom_and_focus_keys_reach_every_pane():
    app = replay_app()
    async with app.run_test(size=(160, 45)) as pilot:
        for key, pane in (("1", "hosts"), ("2", "probes"), ("3", "logs"), ("4", "hypotheses")):
            await pilot.press(key)
            assert app.screen._focused_pane().id == pane, key
            await pilot.press("z")
            assert app.screen.maximized is not None and app.screen.maximized.id == pane
            await pilot.press("z")
            assert app.screen.maximized is None


async def test_short_pane_says_how_many_gpus_it_hides():
    app = replay_app()
    # at 100x30 the compact form shows all eight (test_layout_sizes); shorter, it must hide some
    async with app.run_test(size=(100, 22)) as pilot:
        await pilot.pause(0.3)
        body = str(app.screen.query_one("#hosts-body").render())
        shown = sum(1 for line in body.splitlines() if line.lstrip().startswith("GPU"))
        assert "GPU0" in body and f"+{8 - shown} more" in body and 0 < shown < 8
        await pilot.press("1", "z")  # zoomed: every GPU
        await pilot.pause(0.3)
        body = str(app.screen.query_one("#hosts-body").render())
        assert "GPU7" in body and "more" not in body


async def test_result_column_gets_the_room_and_the_selected_probe_is_shown_whole():
    app = replay_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("2")
        await pilot.pause(0.3)
        table = app.screen.query_one(ProbesPane).table
        widths = {c.key.value: c.width for c in table.columns.values()}
        assert widths["result"] > widths["probe"] and widths["result"] >= 30
        strip = str(app.screen.query_one("#probe-selected").render())
        assert "sglang.srt.layers.moe.flashinfer_cutedsl_moe" in strip  # p7, whole


def test_x_cancels_the_probe_meant():
    state = SessionState()
    for pid, status in (("p1", "ok"), ("p2", "running"), ("p3", "queued"), ("p4", "running"),
                        ("p5", "failed")):
        state.probes[pid] = ProbeState(probe_id=pid, host="h", kind="shell", args=["x"],
                                       status=status)
    assert cancel_target(state, "p3") == "p3"  # selected and still queued
    assert cancel_target(state, "p5") == "p4"  # selected finished: newest running
    assert cancel_target(state, None) == "p4"
    for pid in ("p2", "p4"):
        state.probes[pid].status = "cancelled"
    assert cancel_target(state, "p1") == "p3"
    state.probes["p3"].status = "cancelled"
    assert cancel_target(state, "p1") is None


def test_default_probe_host_is_selected_then_first_with_gpus():
    state = SessionState()
    state.host("localhost")
    state.host("gpu-a").sample = ev.HostSample(host="gpu-a", gpus=[ev.GpuSample(index=0)])
    target = ProbeTarget(state=state)
    assert target.target(["localhost", "gpu-a"]) == "gpu-a"
    target.choose("localhost")
    assert target.target(["localhost", "gpu-a"]) == "localhost"


async def test_hosts_pane_selection_moves_the_probe_target(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(lambda: "localhost" in app.session.state.hosts)
        await pilot.press("1", "down")
        assert app.screen.query_one(HostsPane).selected_host == "localhost"
        assert app.probe_target.target(["localhost"]) == "localhost"
        await pilot.pause(0.2)
        assert "▶" in str(app.screen.query_one("#hosts-body").render())
        assert app.screen.query_one(ProbesPane).border_subtitle == "→ localhost"
        await pilot.press("q")


async def test_output_view_opens_on_the_result_with_the_script_folded():
    app = replay_app()
    async with app.run_test(size=(160, 45)) as pilot:
        app.push_screen(ProbeOutputScreen("p4"))
        await pilot.pause(0.3)
        text = app.screen.text
        first = text.splitlines()[:3]
        assert first[0].startswith("import flashinfer.jit.cutedsl  on gpu-a  (failed")
        assert first[2].startswith("ModuleNotFoundError")
        assert "@@perftriage-result@@" not in text
        assert "def _emit" not in text  # the helper script is folded...
        await pilot.press("s")
        await pilot.pause(0.2)
        assert "def _emit" in app.screen.text  # ...and shown on request
        await pilot.press("c")  # headless: no clipboard, and it says so
        await pilot.pause(0.1)
        assert any("NOT copied" in n.message for n in app._notifications)


async def test_remove_a_probe_and_undo_a_hypothesis_edit(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("i", *"xflashinfer.cut", "enter")
        await wait_for(lambda: any(p.finished for p in app.session.state.probes.values()))
        await pilot.press("2", "d")
        await wait_for(lambda: not app.session.state.probes)
        await pilot.press("H", *"MoE slow path", "tab", *"cutlass", "ctrl+s")
        await wait_for(lambda: bool(app.session.state.hypotheses))
        await pilot.press("4", "s")  # status: open -> testing
        await wait_for(lambda: app.session.state.hypotheses[0].status != "open")
        await pilot.press("ctrl+z")
        await wait_for(lambda: app.session.state.hypotheses[0].status == "open")
        await pilot.press("q")


async def test_logs_like_lnav_match_k_of_n_jump_to_time_filter_reuses_search():
    from perftriage.ui.widgets.log_view import LogView
    from perftriage.ui.widgets.logs import LogsPane

    app = replay_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("3")
        view = app.screen.query_one(LogView)
        assert app.focused is view
        await pilot.press("slash", *"Decode", "enter")
        await wait_for(lambda: view.search_text == "Decode")
        await pilot.press("n")
        n = len(view.index.matches)
        assert f"match 1 of {n}" in view.status()
        await pilot.press("n")
        assert f"match 2 of {n}" in view.status()
        await pilot.press("f")  # the filter prompt starts from the search
        await pilot.pause(0.2)
        assert app.screen.query_one("#prompt-input").value == "Decode"
        await pilot.press("escape")
        await pilot.press("t", *"09:20", "enter")
        await pilot.pause(0.3)
        key, text = view.index.row(view.cursor)
        assert text.startswith("[2026-11-28 09:20")
        # the tab and the lines of the merged view name a source the same way
        tabs = [str(t.label) for t in app.screen.query("Tab")]
        prefix = view._label(view.index.rows[0])
        assert prefix in tabs
        pane = app.screen.query_one(LogsPane)
        assert pane is not None


async def test_question_mark_lists_the_apps_keys_before_textuals():
    from perftriage.ui.screens.keys_help import KeysScreen

    app = replay_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("2", "question_mark")
        await pilot.pause(0.2)
        assert isinstance(app.screen, KeysScreen)
        titles = [t for t, _ in app.screen.sections]
        assert titles[0] == "everywhere" and titles[1] == "Probes pane only"
        assert titles[-1] == "scrolling and editing (Textual)"
        everywhere = dict(app.screen.sections[0][1])
        assert "z" in everywhere and "q" in everywhere
        probes_keys = dict(app.screen.sections[1][1])
        # a saved session read whole: reading a probe's output works, cancelling one does not
        assert "⏎" in probes_keys and "x" not in probes_keys
        await pilot.press("escape")
        assert not isinstance(app.screen, KeysScreen)
