"""The engine strip and the latency heatmap widgets, on replayed events."""

from __future__ import annotations

from textual.app import App

from perftriage.core.model.reducer import replay
from perftriage.ui.widgets.engine import EngineStrip, LatencyHeatmap, shown_engines
from tests.support.engine_events import drifting_samples


class EngineApp(App):
    def __init__(self, events) -> None:
        super().__init__()
        self.state = replay(events)

    def compose(self):
        yield EngineStrip(id="strip")
        yield LatencyHeatmap(id="heat")

    def on_mount(self) -> None:
        engines = shown_engines(self.state)
        self.query_one(EngineStrip).show(engines)
        self.query_one(LatencyHeatmap).show(engines[0] if engines else None)


def test_engine_strip_and_heatmap_snapshot(snap_compare):
    assert snap_compare(EngineApp(drifting_samples()), terminal_size=(100, 10))


async def test_hidden_without_an_endpoint():
    app = EngineApp([])
    async with app.run_test(size=(80, 10)):
        assert not app.query_one(EngineStrip).display
        assert not app.query_one(LatencyHeatmap).display


async def test_shows_the_state_until_samples_come():
    app = EngineApp(drifting_samples()[:1])  # only the status event
    async with app.run_test(size=(80, 10)):
        strip = app.query_one(EngineStrip)
        assert strip.display and "connecting" in str(strip.render())
