"""The cockpit side of checks: the form takes a check (refusing a bad one with
its position), the live cockpit evaluates it each second and the Hypotheses
pane shows the verdict beside the hand-set status; the details view and the
report say when and why it flipped; an SVG snapshot of the H200 idle run."""

from __future__ import annotations

from pathlib import Path

from perftriage.ui.app import PerftriageApp
from perftriage.core.report.markdown import render_transcript
from perftriage.core.store import transcript
from perftriage.services.cockpit import Cockpit
from perftriage.ui.widgets.hypotheses import HypothesesPane

from tests.support.helpers import replay_app, wait_for

IDLE_RUN = Path(__file__).parents[1] / "fixtures" / "checks" / "h200-idle-run" / "transcript.jsonl"


def _cell(app, hyp_id: str, column: int = 1) -> str:
    pane = app.screen.query_one(HypothesesPane)
    return str(pane.table.get_row(hyp_id)[column])


async def test_form_check_is_vetted_then_evaluated_live(tmp_path):
    app = PerftriageApp(Cockpit(sessions_dir=tmp_path, sample_interval=0.5))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("H", *"host busy", "tab", "tab", *"host.cpu_pct >= 0 and host.lod1 > -1",
                          "enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "HypothesisFormScreen"
        error = str(app.screen.query_one("#hyp-form-error").render())
        assert "column 23: unknown signal host.lod1 (did you mean host.load1?)" in error
        assert app.screen.focused.id == "hyp-check"
        assert app.screen.focused.cursor_position == 22  # at the error
        await pilot.press("end", *["backspace"] * 9, *"load1 > -1", "tab", *"2s", "enter")
        await wait_for(lambda: app.session.state.hypotheses)
        h = app.session.state.hypotheses[0]
        assert (h.check, h.for_s) == ("host.cpu_pct >= 0 and host.load1 > -1", 2.0)
        await wait_for(lambda: h.verdicts.get("localhost") is not None
                       and h.verdicts["localhost"].verdict == "supported", timeout=15)
        assert [c.verdict for c in h.verdict_log][-2:] == ["pending", "supported"]
        await wait_for(lambda: "✔ supported" in _cell(app, h.hyp_id))
        assert _cell(app, h.hyp_id).startswith("○ open  ")  # the hand-set status stays first
        await pilot.press("q")


async def test_replayed_idle_run_shows_verdicts_and_why_in_details():
    app = replay_app(IDLE_RUN)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("end")  # to the end of the recording
        await wait_for(lambda: app.session.state.ended, timeout=20)
        await wait_for(lambda: "✔ supported" in _cell(app, "h2"))
        assert "✘ refuted" in _cell(app, "h1")
        app.screen.query_one(HypothesesPane).table.focus()
        app.screen.query_one(HypothesesPane).select("h2")
        await pilot.press("enter")
        await wait_for(lambda: type(app.screen).__name__ == "HypothesisDetailScreen")
        await wait_for(lambda: "check:" in str(app.screen.query_one("#hyp-detail-head").render()))
        head = str(app.screen.query_one("#hyp-detail-head").render())
        assert "check: gap.idle_pct >= 30 and gap.traffic_ratio < 1.5 (for 5 s): supported" in head
        assert "0:10 localhost became refuted (gap.idle_pct = 21.9, gap.traffic_ratio = 1)" in head
        assert "0:50 localhost became supported (gap.idle_pct = 93.9, " in head
        await pilot.press("escape", "q")


def test_report_says_when_and_why_each_check_flipped():
    text = render_transcript(transcript.read(IDLE_RUN))
    assert "   - check: gap.traffic_ratio \\>= 1.5 (for 5 s): refuted\n" in text
    assert "     - 0:10 localhost became refuted (gap.idle_pct = 21.9, gap.traffic_ratio = 1)\n" \
        in text
    assert ("     - 0:50 localhost became supported (gap.idle_pct = 93.9, "
            "gap.traffic_ratio = 1.01 (true for 5 s))\n") in text


def test_snapshot_hypotheses_with_checks(snap_compare):
    async def to_end(pilot):
        await pilot.press("end")
        await wait_for(lambda: pilot.app.session.state.ended, timeout=20)
        await pilot.pause(0.5)

    assert snap_compare(replay_app(IDLE_RUN), terminal_size=(160, 45), run_before=to_end)
