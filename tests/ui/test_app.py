import json

from perftriage.ui.app import PerftriageApp
from perftriage.ui.screens.keys_help import KeysScreen
from perftriage.core.store import transcript
from perftriage.services.cockpit import Cockpit
from perftriage.ui.widgets.hosts import HostsPane
from perftriage.ui.widgets.hypotheses import HypothesesPane
from perftriage.ui.widgets.logs import LogsPane
from perftriage.ui.widgets.probes import ProbesPane

from tests.support.helpers import replay_app, wait_for


def _live_app(tmp_path):
    return PerftriageApp(Cockpit(sessions_dir=tmp_path, sample_interval=0.1))


async def test_four_panes_render_and_q_quits_with_complete_transcript(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        titles = {p.border_title for p in app.screen.query("Pane")}
        assert titles == {"Hosts", "Probes", "Logs", "Hypotheses"}
        for cls in (HostsPane, ProbesPane, LogsPane, HypothesesPane):
            assert app.screen.query_one(cls).region.area > 0
        await wait_for(lambda: app.session.state.hosts["localhost"].sample is not None)
        await pilot.pause(0.2)
        body = str(app.screen.query_one("#hosts-body").render())
        assert "localhost" in body and "CPU" in body and "RAM" in body
        await pilot.press("q")
    assert app.return_code == 0
    files = list(tmp_path.glob("*.jsonl"))
    assert len(files) == 1
    header = json.loads(files[0].read_text().splitlines()[0])
    assert header["format"] == "perftriage-session" and header["hosts"] == ["localhost"]
    tr = transcript.read(files[0])
    assert tr.problems == []
    assert type(tr.events[-1]).__name__ == "SessionEnded"
    assert any(type(e).__name__ == "HostSample" for e in tr.events)


async def test_no_gpu_is_said_plainly(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(lambda: app.session.state.hosts["localhost"].sample is not None)
        sample = app.session.state.hosts["localhost"].sample
        await pilot.pause(0.2)
        body = str(app.screen.query_one("#hosts-body").render())
        if not sample.gpus:
            # "no GPU" where the longer form does not fit: a loaded box's
            # "CPU 100% … load 10.11" is wider than an idle one's
            assert ("no NVIDIA GPU" in body or "· no GPU" in body) and "Traceback" not in body
        else:
            assert "GPU0" in body
        await pilot.press("q")


async def test_import_key_queues_a_probe_that_shows_its_verdict(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("i")
        await pilot.press(*"json")
        await pilot.press("enter")
        await wait_for(lambda: any(p.finished for p in app.session.state.probes.values()))
        await pilot.pause(0.2)
        p = next(iter(app.session.state.probes.values()))
        assert (p.kind, p.args, p.status) == ("import", ["json"], "ok")
        table = app.screen.query_one(ProbesPane).table
        assert table.row_count == 1
        row = [str(c) for c in table.get_row(p.probe_id)]
        assert "import json" in row and any("ok" in c for c in row)
        await pilot.press("q")


async def test_prompt_validates_inline(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("i", "enter")
        assert "enter a value" in str(app.screen.query_one("#prompt-error").render())
        await pilot.press(*"a b", "enter")
        assert "usage" in str(app.screen.query_one("#prompt-error").render())
        await pilot.press("escape")
        assert app.session.state.probes == {}
        await pilot.press("q")


async def test_note_key_records_a_note(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("N", *"restarting now", "enter")
        assert [n.text for n in app.session.state.notes] == ["restarting now"]
        await pilot.press("q")
    tr = transcript.read(next(tmp_path.glob("*.jsonl")))
    assert any(getattr(e, "text", None) == "restarting now" for e in tr.events)


async def test_replay_shows_saved_state():
    app = replay_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0.2)
        assert app.screen.query_one(ProbesPane).table.row_count == 7  # the seed example
        assert app.screen.query_one(HypothesesPane).query_one("DataTable").row_count == 11
        body = str(app.screen.query_one("#hosts-body").render())
        assert "gpu-a" in body and "GPU1" in body
        await pilot.press("q")


async def test_question_mark_toggles_the_keys_panel(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, KeysScreen)  # the app's keys first (keys_help)
        await pilot.press("question_mark")
        await pilot.pause()
        assert not isinstance(app.screen, KeysScreen)
        await pilot.press("q")


async def test_the_app_collects_the_young_generation_less_often() -> None:
    import gc

    from perftriage.ui.app import GC_YOUNG_THRESHOLD

    saved = gc.get_threshold()
    gc.set_threshold(700, *saved[1:])
    try:
        app = replay_app()
        async with app.run_test():
            assert gc.get_threshold() == (GC_YOUNG_THRESHOLD, *saved[1:])
    finally:
        gc.set_threshold(*saved)
