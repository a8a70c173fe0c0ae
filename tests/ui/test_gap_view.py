"""The Gap view in the G panel, on the real H200 run replayed up
to a moment of each phase: the figures of each phase, and no verdict of the
gap's own (the recording has no live triage: the view says so rather than
judge); an SVG snapshot of the fast phase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.helpers import FIXTURES, replay_app

RUN = FIXTURES / "gpm" / "h200-run"


def cut_transcript(tmp_path: Path, phase: str) -> Path:
    """The transcript up to the middle of ``phase`` (by the stand-in's own timeline)."""
    truth = [t for t in json.loads((RUN / "groundtruth.json").read_text()) if t["phase"] == phase]
    until = truth[len(truth) // 2]["wall"]
    lines = (RUN / "transcript.jsonl").read_text().splitlines()
    keep = [lines[0]] + [ln for ln in lines[1:] if json.loads(ln).get("wall", 0) <= until]
    out = tmp_path / f"{phase}.jsonl"
    out.write_text("\n".join(keep) + "\n")
    return out


async def open_gap_view(path: Path):
    from perftriage.ui.screens.roofline import RooflineScreen

    app = replay_app(path)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        app.push_screen(RooflineScreen(app.cockpit.session.state, read_only=True))
        await pilot.pause()
        return str(app.screen.query_one("#gap-live").render())


@pytest.mark.parametrize(("phase", "words"), [
    ("slow", "gap 8.86×"),
    ("fast", "gap 1.11×"),
])
async def test_gap_view_figures_per_phase_and_no_verdict_of_its_own(tmp_path, phase, words):
    text = await open_gap_view(cut_transcript(tmp_path, phase))
    assert "live gap · localhost · nvml-gpm" in text
    assert words in text
    assert "floor 8.309 ms" in text and "ms/tok@bs1" in text
    assert "memory moves" not in text and "within" not in text  # the old verdicts
    assert "verdict: the triage has not evaluated this host yet" in text


def test_gap_view_snapshot_fast_phase(snap_compare, tmp_path):
    from perftriage.ui.screens.roofline import RooflineScreen

    path = cut_transcript(tmp_path, "fast")

    async def open_panel(pilot):
        app = pilot.app
        app.push_screen(RooflineScreen(app.cockpit.session.state, read_only=True))
        await pilot.pause()

    assert snap_compare(replay_app(path), terminal_size=(160, 50), run_before=open_panel)
