"""The one refresh path (perftriage.ui.refresh): an emit reaches the views that
show its section, coalesced to at most one render per frame; views of other
sections are left alone; detail screens follow the state without polling."""

from perftriage.ui.app import PerftriageApp
from perftriage.core.model import events as ev
from perftriage.core.model.state import Section
from perftriage.ui.screens.hypothesis_detail import HypothesisDetailScreen
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry
from perftriage.ui.widgets.hypotheses import HypothesesPane
from perftriage.ui.widgets.logs import LogsPane

from tests.support.helpers import wait_for


def _app(tmp_path) -> PerftriageApp:
    return PerftriageApp(Cockpit(registry=HostRegistry(), sessions_dir=tmp_path))


def _count_renders(view) -> list[int]:
    calls: list[int] = []
    original = view.show_state

    def counting(state):
        calls.append(state.versions[Section.NOTES])
        original(state)

    view.show_state = counting
    return calls


async def test_a_burst_of_emits_renders_once_per_frame_and_only_its_views(tmp_path):
    app = _app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        hyp = app.screen.query_one(HypothesesPane)
        logs = app.screen.query_one(LogsPane)
        hyp_renders, log_renders = _count_renders(hyp), _count_renders(logs)
        for i in range(500):
            app.session.emit(ev.NoteAdded(text=f"note {i}"))
        await wait_for(lambda: hyp_renders and hyp_renders[-1] == 500)
        await pilot.pause(0.3)
        # 500 events, a handful of frames: never one render per event
        assert 1 <= len(hyp_renders) <= 3, hyp_renders
        # the Logs pane does not show notes: at most the once-a-second clock
        # tick re-renders it (for a log gone quiet), never an event of this burst
        assert len(log_renders) <= 2, log_renders
        assert "note 499" in str(hyp.query_one("#hyp-notes").render())
        await pilot.press("q")


async def test_detail_screen_follows_the_state(tmp_path):
    app = _app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        app.session.emit(ev.HypothesisAdded(hyp_id="h1", title="slow MoE path"))
        await pilot.pause()
        await app.push_screen(HypothesisDetailScreen("h1"))
        await wait_for(lambda: isinstance(app.screen, HypothesisDetailScreen))
        screen = app.screen
        app.session.emit(ev.HypothesisUpdated(hyp_id="h1", title="renamed"))
        await wait_for(lambda: "renamed" in str(screen.query_one("#hyp-detail-head").render()))
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, HypothesisDetailScreen))
        app.session.emit(ev.HypothesisUpdated(hyp_id="h1", title="after close"))
        await pilot.pause(0.3)  # a dismissed screen is no longer rendered (nothing raises)
        await pilot.press("q")
