"""report, replay and sessions on transcripts recorded on real hosts.

``session-h200-standin.jsonl`` was recorded by the cockpit on an NVIDIA H200
(localhost via NVML plus the same GPU over SSH, following a server log): its
``host.info`` holds per-GPU maps (``bandwidth_gbs: {"0": 4814.3}``), which
crashed ``perftriage report`` on every real-GPU transcript.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from tests.support.helpers import EXAMPLE_SESSION, FIXTURES, replay_app

FIXTURES = FIXTURES
H200 = FIXTURES / "session-h200-standin.jsonl"
REAL = [H200, FIXTURES / "report" / "investigation.jsonl", EXAMPLE_SESSION]


def test_report_on_the_h200_transcript_shows_the_per_gpu_bandwidth():
    r = CliRunner().invoke(cli, ["report", str(H200), "-o", "-"])
    assert r.exit_code == 0, r.output
    assert "- **localhost** (up): 1 × NVIDIA H200, 140 GiB; 126 GiB RAM, 4814 GB/s per GPU" in r.output
    assert "Decode batch" in r.output or "gen" in r.output


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_report_replay_and_sessions_on_real_recordings(tmp_path, path):
    runner = CliRunner()
    out = tmp_path / "r.md"
    r = runner.invoke(cli, ["report", str(path), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_text().startswith("# perftriage report:")

    r = runner.invoke(cli, ["replay", "--json", str(path)])
    assert r.exit_code == 0, r.output
    state = json.loads(r.output)
    assert state["hosts"] and state["t"] > 0

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    shutil.copy(path, sessions / path.name)
    r = runner.invoke(cli, ["--sessions-dir", str(sessions), "sessions", "--json"])
    assert r.exit_code == 0, r.output
    [info] = json.loads(r.output)
    assert path.stem in json.dumps(info)
    r = runner.invoke(cli, ["--sessions-dir", str(sessions), "sessions"])
    assert r.exit_code == 0 and path.stem in r.output, r.output


async def test_replay_of_the_h200_transcript_renders_every_screen():
    from perftriage.ui.screens.host_detail import HostDetailScreen
    from perftriage.ui.screens.roofline import RooflineScreen

    app = replay_app(H200)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        state = app.cockpit.session.state
        assert state.hosts["localhost"].info["bandwidth_gbs"] == {"0": 4814.3}
        assert len(state.logs["log1"].lines) > 50
        for host in ("localhost", "h200"):
            app.push_screen(HostDetailScreen(host))
            await pilot.pause()
            assert "NVIDIA H200" in str(app.screen.query_one("#host-detail-body").render())
            app.pop_screen()
        app.push_screen(RooflineScreen(state))
        await pilot.pause()
        assert app.screen.query_one("#rl-bandwidth_gbs").value == "4814"
