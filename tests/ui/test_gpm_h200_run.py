"""The recorded real run on an H200 (scripts/h200_gap_run.py, files in
tests/fixtures/gpm/h200-run/): replayed through the reducer, the Hosts pane's
DRAM bandwidth in the fast phase is within 3 % of the bytes the stand-in
counted, and the recorded verdict differs between the slow and fast phase,
through NVML GPM (localhost), a dmon stream (viadmon) and, in the second run,
the remote pynvml loop (viapynvml) alike."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.core.report.markdown import render_transcript
from perftriage.core.store import transcript
from tests.support.helpers import FIXTURES

FIX = FIXTURES / "gpm"
RUN = FIX / "h200-run"
CASES = [("h200-run", "localhost"), ("h200-run", "viadmon"),
         ("h200-run2", "localhost"), ("h200-run2", "viadmon"), ("h200-run2", "viapynvml")]


def phases(run: Path = RUN):
    truth = json.loads((run / "groundtruth.json").read_text())
    out = {}
    for name in ("slow", "fast"):
        rows = [t for t in truth if t["phase"] == name][2:]  # skip the switch-over
        out[name] = (rows[0]["wall"], rows[-1]["wall"],
                     statistics.median(float(t["bw_TBps"]) for t in rows) * 1000)
    return out


def replay_with_pane_text(run: Path = RUN):
    """Replay the transcript; at each gpu.counters event, the Hosts pane's text."""
    from perftriage.ui.widgets.hosts import host_block

    tr = transcript.read(run / "transcript.jsonl")
    state = SessionState()
    seen = []  # (wall, host, pane text)
    for e in tr.events:
        apply(state, e)
        if type(e).__name__ == "GpuCountersSample" and state.hosts[e.host].sample is not None:
            seen.append((e.wall, e.host, host_block(state.hosts[e.host], e.t, width=160).plain))
    return state, seen


@pytest.mark.parametrize(("run", "host"), CASES)
def test_hosts_pane_dram_within_3pct_of_counted_bytes_in_fast_phase(run, host):
    lo, hi, counted = phases(FIX / run)["fast"]
    _, seen = replay_with_pane_text(FIX / run)
    shown = []
    for wall, h, text in seen:
        if h == host and lo <= wall <= hi:
            m = re.search(r"DRAM (\d+)GB/s (\d+)%", text)
            assert m, text
            shown.append(float(m.group(1)))
    assert len(shown) >= 30
    assert statistics.median(shown) == pytest.approx(counted, rel=0.03)


@pytest.mark.parametrize(("run", "host"), CASES)
def test_verdict_differs_between_slow_and_fast(run, host):
    state, _ = replay_with_pane_text(FIX / run)
    kinds = {}
    for name, (lo, hi, _) in phases(FIX / run).items():
        kinds[name] = {s.verdict_kind for s in state.gap_samples if s.host == host and lo <= s.wall <= hi}
    assert kinds == {"slow": {"wasted-traffic"}, "fast": {"near-floor"}}
    sources = {e.source for e in state.gap_samples if e.host == host}
    assert sources == {"viadmon": {"nvidia-smi-dmon"}}.get(host, {"nvml-gpm"})


def test_cli_outputs_of_the_run():
    cli = json.loads((RUN / "cli.json").read_text())
    slow, fast = cli["gap_slow"]["out"], cli["gap_fast"]["out"]
    assert slow["source"] == fast["source"] == "nvml-gpm"
    assert cli["gap_fast_viadmon"]["out"]["source"] == "nvidia-smi-dmon"
    assert slow["peak_gbs"] == 4814.3 and slow["traffic_ratio"] == pytest.approx(5.0, abs=0.1)
    assert fast["traffic_ratio"] == pytest.approx(1.0, abs=0.03)
    assert slow["verdict"] != fast["verdict"]
    (host,) = cli["status_fast"]["out"]["hosts"]
    g = host["gpus"][0]
    assert g["dram_bw_pct"] > 85 and g["gpm_error"] is None and g["dram_bw_gbs"] > 4000


def test_report_of_the_run_has_the_bandwidth_section():
    text = render_transcript(transcript.read(RUN / "transcript.jsonl"))
    section = text[text.index("## Memory bandwidth and the live gap"):]
    # figures per phase of the triage, beside the triage's top cause: no verdict of the gap's
    assert "| 0:00 | 0:33 | wasted-traffic |" in section
    assert "| 0:33 | 1:20 | near-floor |" in section
    assert "within 11 % of the floor" not in section and "look at" not in section
    assert "DRAM busy %" in section and "```" in section
