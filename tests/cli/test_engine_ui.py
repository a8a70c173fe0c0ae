"""The cockpit shows the engine's own figures in the Logs pane: a strip per
/metrics endpoint and the inter-token latency heatmap (replayed session)."""

from __future__ import annotations

from perftriage.core.model import events as ev
from perftriage.core.store import transcript
from perftriage.ui.widgets.engine import EngineStrip, LatencyHeatmap
from tests.support.engine_events import drifting_samples
from tests.support.helpers import EXAMPLE_SESSION, replay_app


def session_with_engine(tmp_path):
    """The bundled example session with an SGLang endpoint's last minute added."""
    tr = transcript.read(EXAMPLE_SESSION)
    events = [e for e in tr.events if not isinstance(e, ev.SessionEnded)]
    end = max(e.t for e in events)
    extra = drifting_samples(host="gpu-a", source="engine:gpu-a")
    for e in extra:
        e.t += end - 61.0
    merged = sorted(events + extra, key=lambda e: e.t)
    path = tmp_path / "with-engine.jsonl"
    writer = transcript.TranscriptWriter(path, tr.header)
    for e in [*merged, ev.SessionEnded(reason="quit", t=end + 0.5)]:
        writer.write(e)
    writer.close()
    return path


def test_main_screen_with_an_engine_endpoint(snap_compare, tmp_path):
    assert snap_compare(replay_app(session_with_engine(tmp_path)), terminal_size=(160, 50))


async def test_strip_and_heatmap_show_in_replay(tmp_path):
    app = replay_app(session_with_engine(tmp_path))
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        strip = app.screen.query_one(EngineStrip)
        heat = app.screen.query_one(LatencyHeatmap)
        assert strip.display and heat.display
        assert "sglang · ITL p50/p99" in str(strip.render())
        assert heat.engine is not None and len(heat.engine.itl_rows) == 59


async def test_at_100x30_log_lines_win_over_the_heatmap(tmp_path):
    """A 30-row terminal: the tabs, figures, engine strip and an 8-row
    heatmap filled the Logs pane and no log line showed (until z)."""
    from perftriage.ui.widgets.log_view import LogView
    from perftriage.ui.widgets.logs import LogsPane

    app = replay_app(session_with_engine(tmp_path))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        pane = app.screen.query_one(LogsPane)
        assert not pane.query_one(LatencyHeatmap).display
        assert pane.query_one(LogView).size.height >= 5
        await pilot.press("3", "z")  # the Logs pane maximized: room again for the heatmap
        await pilot.pause()
        assert pane.query_one(LatencyHeatmap).display


async def test_no_endpoint_no_strip():
    app = replay_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        assert not app.screen.query_one(EngineStrip).display
        assert not app.screen.query_one(LatencyHeatmap).display


async def test_demo_shows_the_simulated_engine_live(tmp_path):
    from perftriage.ui.app import PerftriageApp
    from perftriage.cli.commands.demo import start_demo
    from tests.support.demo import fast_demo
    from tests.support.helpers import wait_for

    cockpit = fast_demo(tmp_path)
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 50)) as pilot:
        await start_demo(cockpit)
        strip = app.screen.query_one(EngineStrip)
        heat = app.screen.query_one(LatencyHeatmap)
        await wait_for(lambda: "ms/tok" in str(strip.render()), timeout=40)
        await wait_for(lambda: heat.display and heat.engine is not None
                       and len(heat.engine.itl_rows) >= 2, timeout=20)
        await pilot.press("q")
