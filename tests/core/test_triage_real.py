"""The triage on real recordings: the H200 traces (eager, CUDA graph), the
real ncu probe result, the H200 bandwidth stand-in's transcript and the
two-run recording made from it. What each should say is what the H200
investigation of issue 40 found by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perftriage.core.compare.load import load
from perftriage.core.compare.recording import Recording
from perftriage.core.model import events as ev
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.triage.phases import triage
from tests.support.compare_recordings import two_runs

FIX = Path(__file__).resolve().parents[1] / "fixtures"
EAGER = [FIX / "profile" / f"eager-TP-{r}.trace.json.gz" for r in (0, 1)]
GRAPH = [FIX / "profile" / "graph-TP-0.trace.json.gz"]


def _with_capture(files, t: float = 10.0, host: str = "h200") -> Recording:
    rec = Recording()
    rec.feed(ev.ProfileCaptured(capture_id="prof1", host=host, summary=summarize_files(files), t=t))
    return rec


def _ncu_probe(rec: Recording, t: float, host: str = "h200") -> None:
    probe = json.loads((FIX / "ncu" / "probe-ncu-moe-step.json").read_text())
    rec.feed(ev.ProbeQueued(probe_id="p7", host=host, kind="ncu", args=[], t=t - 1))
    rec.feed(ev.ProbeFinished(probe_id="p7", status="ok", detail=probe["detail"], t=t))


def test_eager_decode_on_the_h200_is_launch_bound():
    """Phase 2 of the H200 investigation: eager, no stall; the old verdict only
    said "host is late … busy in forward". 363 of 450 kernels are shorter
    than their launch and no kernel comes from a graph."""
    [phase] = triage(_with_capture(EAGER), 0, 20)
    top = phase.findings[0]
    assert top.cause == "launch-bound" and top.confirmed and top.severity == "high"
    summary = summarize_files(EAGER)
    b = summary.idle_breakdown
    assert b is not None and summary.idle_pct is not None
    assert top.explains_pct == pytest.approx(summary.idle_pct * b.host_wait_pct / 100, abs=0.5)
    assert "CUDA graphs on (drop --disable-cuda-graph)" in " ".join(top.fix).replace("turn ", "")
    assert any("shorter than their launch call" in e.text for e in top.evidence)
    # no stacks yet: the next witness says where the host is (a 3 s record)
    assert top.next is not None and top.next.kind == "stacks" and top.next.args == ["--seconds", "3"]
    assert "kernel-below-roofline" not in {f.cause for f in phase.findings}


def test_cuda_graph_decode_never_says_cuda_graphs():
    """Phase 3: CUDA graphs on, the GPU busy 96 %: the kernels are a lead,
    ncu on them a next step (after the free gap lead: no gap yet); nothing
    on the host side."""
    [phase] = triage(_with_capture(GRAPH), 0, 20)
    causes = [f.cause for f in phase.findings]
    assert causes[:2] == ["wasted-traffic", "kernel-below-roofline"]
    assert phase.findings[0].next is not None and phase.findings[0].next.kind == "gap"
    assert not {"launch-bound", "host-stall", "host-sync"} & set(causes)
    top = phase.findings[1]
    assert not top.confirmed and top.next is not None and top.next.kind == "ncu"
    regex = top.next.args[top.next.args.index("--kernel") + 1]
    assert "nvjet_sm90_tst_256x8_64x6_2x1_v_bz_NNT" in regex
    assert "CUDA graph" not in top.title and "launch" not in top.title


def test_an_ncu_result_in_the_phase_confirms_and_names_the_kernels():
    rec = _with_capture(GRAPH)
    _ncu_probe(rec, 15.0)
    [phase] = triage(rec, 0, 20)
    top = phase.findings[0]
    assert top.cause == "kernel-below-roofline" and top.confirmed
    assert "fused_moe_kernel" in " ".join(e.text for e in top.evidence)
    assert top.next is None


def test_evidence_from_before_a_restart_is_history():
    """The second H200 run: after a restart the verdict still named the
    frame of a process that had exited. A capture and an ncu result of the
    first server never describe the second."""
    rec = _with_capture(EAGER, t=10.0)
    _ncu_probe(rec, 12.0)
    rec.feed(ev.ServerEvent(server="sglang", host="h200", state="starting", t=30.0))
    rec.feed(ev.ProfileCaptured(capture_id="prof2", host="h200", summary=summarize_files(GRAPH),
                                t=45.0))
    first, second = triage(rec, 0, 60)
    assert (first.end, second.start) == (30.0, 30.0) and second.run_start
    assert first.findings[0].cause == "launch-bound"
    sources = {e.source for f in second.findings for e in f.evidence}
    assert "prof2" in sources and not {"prof1", "p7"} & sources
    kernels = next(f for f in second.findings if f.cause == "kernel-below-roofline")
    assert not kernels.confirmed  # the ncu result was of the old server
    assert kernels.next is not None and kernels.next.kind == "ncu"


def test_the_h200_bandwidth_recording_splits_at_the_fix():
    """The stand-in's transcript: 36 s upcasting (13.5 tok/s), then the
    plain GEMV (108 tok/s). Two phases; NVML says the GPU is busy in both,
    so the kernels are the lead, never the host."""
    rec = load(FIX / "session-h200-standin.jsonl")
    phases = [p for p in triage(rec) if p.host == "h200"]
    assert len(phases) == 2
    assert phases[0].end == pytest.approx(36, abs=3)
    for p in phases:
        causes = [f.cause for f in p.findings]
        assert "kernel-below-roofline" in causes
        assert not {"launch-bound", "host-stall", "host-sync"} & set(causes)
    # leads and remarks are not problems a fix resolves: nothing to say "resolved" of
    assert phases[1].earlier == []


def test_the_h200_idle_run_asks_for_a_capture_when_the_gpu_idles():
    """The checks' real H200 run: 40 s back to back (kernels 98 % of wall
    time, 1.28x the floor), then the host sleeps after every layer (NVML
    util 8 %). Near the floor is no problem; the idle phase is a lead whose
    next witness is a capture — the triage does not guess the host's cause."""
    rec = load(FIX / "checks" / "h200-idle-run" / "transcript.jsonl")
    busy, idle = triage(rec)
    assert busy.end == pytest.approx(44, abs=3)
    assert busy.findings[0].cause == "near-floor" and busy.findings[0].severity == "moderate"
    assert not [f for f in busy.findings if f.severity == "high"]
    top = idle.findings[0]
    assert top.cause == "need-evidence" and top.severity == "high"
    assert top.explains_pct == pytest.approx(92, abs=2)
    assert top.next is not None and top.next.kind == "capture"
    assert idle.earlier == []  # near the floor was no problem: never "resolved" by a slowdown


def test_wasted_traffic_is_resolved_after_the_restart(tmp_path):
    """The two-run recording (real GPM counters via dmon, then a restart with
    another backend): traffic 5x, then near the floor; the earlier finding
    says resolved with the gap's verdict. Its captures were taken as
    localhost, the same GPU (the same UUID) as viadmon: one machine, so the
    eager capture's launch-bound is viadmon's too, and resolved by the graph
    capture after the restart."""
    rec = load(two_runs(tmp_path / "moe.jsonl"))
    phases = triage(rec)
    assert {p.host for p in phases} == {"viadmon"}  # localhost is the same machine
    assert [[f.cause for f in p.findings][:2] for p in phases] == [
        ["launch-bound", "wasted-traffic"], ["near-floor", "queueing"]]
    assert phases[0].findings[1].severity == "moderate"
    launch, after = phases[1].earlier
    assert launch.state == "resolved" and launch.text.startswith(
        "launch-bound: resolved — capture prof2 at 1:10 no longer finds it")
    assert after.state == "resolved"
    assert after.text.startswith("wasted-traffic: resolved — the gap at ")
    assert after.text.endswith("no longer finds it; outcome: gap 8.9 → 1.1x ▲, p < 0.001")
    # without the captures: the waste is the top, and the lead beside it (the kernels,
    # what the waste left above the floor) is followed too, told again by what
    # suspected it (NVML, the gap)
    rec.profiles.clear()
    phases = triage(rec)
    assert [p.findings[0].cause for p in phases] == ["wasted-traffic", "near-floor"]
    assert phases[0].findings[0].severity == "high"
    after, lead = phases[1].earlier
    assert after.text.startswith("wasted-traffic: resolved — the gap at ")
    assert lead.state == "resolved"
    assert lead.text.startswith("kernel-below-roofline (a lead): resolved — ")
