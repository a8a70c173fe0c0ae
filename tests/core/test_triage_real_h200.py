"""The triage on two more real H200 recordings (tests/fixtures/profile/README.md
says how each was made; the truth is in each ``*.oracle.json``):

- ``hostsync-TP-0``: an eager MoE decode step of 4 layers, each reading one
  value back (``float(x.abs().amax())``: ``aten::_local_scalar_dense``, a
  Memcpy DtoH and a ``cudaStreamSynchronize``); 4 profiled steps. The truth
  is an ablation on the device: the same step without the reads.
- ``stall-TP-0`` + ``stall.pyspy.txt``: the step as a CUDA graph, replayed in
  a loop whose host burns ~6 ms of pure Python a step in
  ``zq_detokenize_planted_stall`` and sleeps 3 ms; a capture of 4 steps and a
  real ``py-spy record`` of 3 s. The truth: the stall's share of wall time,
  timed in the loop with ``time.perf_counter``.
- ``stallsync-TP-0`` + ``stallsync.pyspy.txt``: the same loop, reading the
  next tokens back (``.tolist()``) right after each replay.

Where the triage disagrees with the truth, the test says what it said and
what the truth was. Two rules were calibrated on these captures (idle.py: the
queue's refill after a sync is the sync's; the gap after it only up to the
host's relaunch).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from perftriage.core.compare.recording import Recording
from perftriage.core.model import events as ev
from perftriage.core.probe_kinds.stacks_kind import summarise_result
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.stacks.folded import parse_raw
from perftriage.core.triage.model import Finding
from perftriage.core.triage.phases import triage

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profile"
STALL_FRAME = "zq_detokenize_planted_stall"
SECONDS = 3  # py-spy's -d, the probe's --seconds


def _truth(name: str) -> dict[str, Any]:
    return json.loads((FIX / f"{name}.oracle.json").read_text())["truth"]


def _stacks_detail(variant: str) -> dict[str, Any]:
    """The stacks probe's detail for the fixture's py-spy record, built as the
    probe builds it (``summarise_result``: parse_raw, then summarise_process
    with ticks = 100 Hz × 3 s, mode "record")."""
    truth = _truth(f"{variant}-TP-0")
    data = {"targets": [{"pid": truth["pid"], "name": truth["cmdline"], "rc": 0, "err": "",
                         "out": (FIX / f"{variant}.pyspy.txt").read_text(), "cut": {}}]}
    summary = summarise_result(["--pid", str(truth["pid"]), "--seconds", str(SECONDS)], data)
    assert summary.mode == "record" and summary.seconds == SECONDS and summary.rate == 100
    return msgspec.to_builtins(summary)


def _recording(trace: str, stacks: str | None = None, t: float = 10.0) -> Recording:
    rec = Recording()
    rec.feed(ev.ProfileCaptured(capture_id="prof1", host="h200",
                                summary=summarize_files([FIX / f"{trace}.trace.json.gz"]), t=t))
    if stacks is not None:
        rec.feed(ev.ProbeQueued(probe_id="p1", host="h200", kind="stacks",
                                args=["--seconds", str(SECONDS)], t=t + 1))
        rec.feed(ev.ProbeFinished(probe_id="p1", status="ok", detail=_stacks_detail(stacks),
                                  t=t + 1 + SECONDS))
    return rec


def _findings(rec: Recording) -> list[Finding]:
    [phase] = triage(rec, 0, 20)
    for f in phase.findings:  # what it said, next to the truth, in the test log
        print(f"  {f.line()}")
    return phase.findings


def _by_cause(findings: list[Finding]) -> dict[str, Finding]:
    return {f.cause: f for f in findings}


# --- host-sync ---------------------------------------------------------------------------


def test_the_host_sync_capture_names_the_reads():
    """What the triage gets right on the real capture: a host-sync finding
    naming ``aten::_local_scalar_dense`` with the 16 reads of 4 steps (4 a
    step, as key_averages counted on the device), every sync call counted."""
    truth = _truth("hostsync-TP-0")
    rows = truth["read_rows"]
    assert truth["reads_per_step"] == 4 and truth["active_steps"] == 4
    reads = rows["aten::_local_scalar_dense"]["count"]
    assert reads == 16 == rows["Memcpy DtoH (Device -> Pinned)"]["count"]
    assert rows["cudaStreamSynchronize"]["count"] == 16
    found = _by_cause(_findings(_recording("hostsync-TP-0")))
    sync = found["host-sync"]
    text = " ".join(e.text for e in sync.evidence)
    assert f"read back: {reads} × Memcpy DtoH (Device -> Pinned) by aten::_local_scalar_dense" \
        in text
    # 16 reads and the profiler's 2 own syncs (the warmup's end, the last step's)
    summary = summarize_files([FIX / "hostsync-TP-0.trace.json.gz"])
    assert summary.idle_breakdown is not None
    assert summary.idle_breakdown.sync_calls == reads + 2
    assert sync.confirmed and sync.explains_pct is not None and sync.explains_pct >= 3.0


def test_the_host_sync_capture_tops_with_host_sync():
    """The reads drain the queue; the host relaunches the layer's short kernels
    before it is ahead again: all of it is the reads' (the first gap alone
    gave host-sync 6 % and launch-bound 27 % on top)."""
    truth = _truth("hostsync-TP-0")
    findings = _findings(_recording("hostsync-TP-0"))
    print(f"  truth: reads cost {truth['profiled_read_share_pct']} % of a profiled step, "
          f"{truth['unprofiled_read_share_pct']} % unprofiled; steps (ms) "
          f"{truth['profiled_wall_ms']} profiled, {truth['unprofiled_step_ms']} unprofiled")
    top = findings[0]
    assert top.cause == "host-sync"
    assert top.explains_pct == pytest.approx(truth["profiled_read_share_pct"], abs=10)
    assert "launch-bound" not in _by_cause(findings)


# --- host-stall --------------------------------------------------------------------------


def test_the_pyspy_record_parses_whole():
    """The raw folded output of the real py-spy record: every line parses, the
    samples are py-spy's own count ("Samples: N" on its stderr)."""
    for variant in ("stall", "stallsync"):
        truth = _truth(f"{variant}-TP-0")
        parsed = parse_raw((FIX / f"{variant}.pyspy.txt").read_text())
        assert parsed.bad_lines == 0
        total = sum(s.count for s in parsed.samples)
        assert f"Samples: {total} Errors: 0" in truth["pyspy"]["stderr"]
        assert all(s.thread_name == "MainThread" for s in parsed.samples)


def test_the_stall_capture_alone_asks_for_stacks():
    """The graph capture without stacks: the host is late (graph replays, no
    short eager launches), so it asks for a stacks record, never launch-bound."""
    findings = _findings(_recording("stall-TP-0"))
    top = findings[0]
    assert top.cause == "need-evidence" and top.next is not None
    assert top.next.kind == "stacks"
    assert not {"launch-bound", "host-sync", "kernel-below-roofline"} & {
        f.cause for f in findings}


def test_the_stall_with_stacks_is_host_stall_with_its_wall_share():
    """Capture + real py-spy record: host-stall naming the planted frame, its
    share of WALL time (py-spy's active samples scaled by the ticks of 3 s at
    100 Hz) within 5 points of the share timed in the loop over py-spy's
    window. py-spy kept 187 active samples of the 300 ticks the probe assumes
    (3 s at 100 Hz), but its window was 2.91 s from start to exit: the ticks
    alone make the share read ~2 points low (61.0 % against 63.0 % of 291
    ticks), samples py-spy did not take ~2 more (truth 65.1 %)."""
    truth = _truth("stall-TP-0")
    window = truth["pyspy"]["window"]
    findings = _findings(_recording("stall-TP-0", stacks="stall"))
    top = findings[0]
    assert top.cause == "host-stall" and top.confirmed
    assert f"`{STALL_FRAME}`" in top.title
    detail = _stacks_detail("stall")
    proc = detail["processes"][0]
    stall_samples = sum(r["samples"] for r in proc["stacks"]
                        if STALL_FRAME in r["frames"][-1])
    triage_wall = 100.0 * stall_samples / (100 * SECONDS)
    print(f"  {STALL_FRAME}: triage {triage_wall:.1f} % of wall time, truth "
          f"{window['stall_pct']:.1f} % (perf_counter over py-spy's {window['seconds']} s)")
    assert f"{round(triage_wall)} % of wall time" in top.title
    assert triage_wall == pytest.approx(window["stall_pct"], abs=5.0)
    # the share the finding explains is of the capture's time: at most the host wait
    assert top.explains_pct == pytest.approx(triage_wall, abs=0.5)
    assert "launch-bound" not in {f.cause for f in findings}
    assert "host-sync" not in {f.cause for f in findings}


def test_a_stall_after_a_read_back_is_host_stall():
    """The read returns as the GPU finishes; the 6 ms after it is the host's
    Python: a sync is charged its relaunch, not the stall that follows."""
    truth = _truth("stallsync-TP-0")
    window = truth["pyspy"]["window"]
    findings = _findings(_recording("stallsync-TP-0", stacks="stallsync"))
    print(f"  truth over py-spy's window: stall {window['stall_pct']} %, poll "
          f"{window['poll_pct']} %, replay + read {window['replay_read_pct']} %")
    top = findings[0]
    assert top.cause == "host-stall" and f"`{STALL_FRAME}`" in top.title
    assert "host-sync" not in {f.cause for f in findings}
