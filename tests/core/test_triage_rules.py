"""Each cause's rule on the smallest evidence that shows it, and the
top-down discipline: a child only when its parent holds."""

from __future__ import annotations

import gzip
import json

import msgspec
import pytest

from perftriage.core.compare.recording import Recording
from perftriage.core.model import events as ev
from perftriage.core.parse.gpu_sample import GpuSample
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.stacks.summary import ProcessStacks, StackRow, StacksSummary
from perftriage.core.model.findings import Finding, ranked
from perftriage.core.triage.phases import triage

SGLANG = "[2026-12-04 10:00:00 TP0]"


def decode_line(running: int, queued: int, usage: float, gen: float = 800.0) -> str:
    # SGLang 0.5.23 metrics_reporter.py:1005 (the simulator's form)
    return (f"{SGLANG} Decode batch, #running-req: {running}, #token: 20000, token usage: "
            f"{usage:.2f}, cuda graph: True, gen throughput (token/s): {gen:.2f}, "
            f"#queue-req: {queued}")


RETRACT = (f"{SGLANG} KV cache pool is full. Retract requests. #retracted_reqs: 2, "
           "#new_tokens_gained: 1200, #new_token_ratio: 0.5000 -> 0.8000")


def log_recording(lines_at: list[tuple[float, list[str]]], host: str = "gpu") -> Recording:
    rec = Recording(bulk_logs=False)
    rec.feed(ev.LogSourceOpened(source_id="l1", host=host, path="/srv/log", t=0.0))
    for t, lines in lines_at:
        rec.feed(ev.LogLines(source_id="l1", lines=lines, t=t))
    return rec


def top(rec: Recording, start: float = 0.0, end: float | None = None) -> list[Finding]:
    phases = triage(rec, start, end)
    return phases[-1].findings


# --- the trace: syncs ----------------------------------------------------------


def _trace(tmp_path, with_sync: bool):
    """One stream, 4 steps of: kernel, D2H copy by aten::_local_scalar_dense,
    a cudaStreamSynchronize, then the next launch 200 µs later."""
    events, corr, t = [], 1, 0.0
    for step in range(4):
        for name, cat, op, dur in (("gemv", "kernel", "aten::mm", 50.0),
                                   ("Memcpy DtoH (Device -> Pinned)", "gpu_memcpy",
                                    "aten::_local_scalar_dense", 5.0)):
            launch = "cudaLaunchKernel" if cat == "kernel" else "cudaMemcpyAsync"
            events += [
                {"ph": "X", "cat": "cpu_op", "name": op, "ts": t, "dur": 8, "pid": 1, "tid": 1,
                 "args": {"External id": corr}},
                {"ph": "X", "cat": "cuda_runtime", "name": launch, "ts": t + 1, "dur": 5,
                 "pid": 1, "tid": 1, "args": {"correlation": corr, "External id": corr}},
                {"ph": "X", "cat": cat, "name": name, "ts": t + 10, "dur": dur, "pid": 0,
                 "tid": 7, "args": {"correlation": corr, "stream": 7, "device": 0}}]
            corr += 1
            t += 10 + dur
        if with_sync:
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize",
                           "ts": t - 60, "dur": 62, "pid": 1, "tid": 1, "args": {}})
        t += 200  # the host comes back late
    path = tmp_path / f"x-{with_sync}-TP-0.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    return path


@pytest.mark.parametrize("with_sync", [True, False])
def test_idle_after_a_sync_is_host_sync(tmp_path, with_sync):
    summary = summarize_files([_trace(tmp_path, with_sync)])
    b = summary.idle_breakdown
    assert b is not None
    assert b.sync_calls == (4 if with_sync else 0)
    rec = Recording()
    rec.feed(ev.ProfileCaptured(capture_id="prof1", host="gpu", summary=summary, t=5.0))
    found = top(rec, 0, 10)
    causes = [f.cause for f in found]
    if with_sync:
        assert b.after_sync_pct > 50
        assert causes[0] == "host-sync"
        text = " ".join(e.text for e in found[0].evidence)
        assert "aten::_local_scalar_dense" in text and "4 blocking sync calls" in text
    else:
        assert b.after_sync_pct == 0 and "host-sync" not in causes


# --- stacks: host stall, shares of wall time ---------------------------------


def _stacks_detail(idle_pct: float, stall_pct: float, forward_pct: float) -> dict:
    stacks = [StackRow(samples=int(stall_pct), pct=stall_pct,
                       frames=["run_scheduler (s.py:1)", "event_loop (s.py:9)",
                               "zq_detokenize_planted_stall (s.py:40)"]),
              StackRow(samples=int(forward_pct), pct=forward_pct,
                       frames=["event_loop (s.py:9)", "forward (m.py:3)", "linear (m.py:8)"])]
    proc = ProcessStacks(pid=580, name="sglang::scheduler_TP0", samples=100, idle_pct=idle_pct,
                         gil_pct=None, threads=[], frames=[], stacks=stacks)
    summary = StacksSummary(processes=[proc], top=None, mode="record", seconds=3.0, rate=100)
    return msgspec.to_builtins(summary)


def _idle_capture(rec: Recording, t: float) -> None:
    """The real eager H200 capture: GPU idle 85 %, host wait ~100 % of it."""
    from tests.core.test_triage_real import EAGER

    rec.feed(ev.ProfileCaptured(capture_id="prof1", host="gpu", summary=summarize_files(EAGER),
                                t=t))


def _stacks(rec: Recording, t: float, detail: dict, probe_id: str = "p1") -> None:
    rec.feed(ev.ProbeQueued(probe_id=probe_id, host="gpu", kind="stacks", args=[], t=t - 1))
    rec.feed(ev.ProbeFinished(probe_id=probe_id, status="ok", detail=detail, t=t))


def test_a_host_stall_is_told_in_wall_time_not_busy_samples():
    """issue 41 item 1: 42 % of busy samples of a 96 %-idle process is ~1.7 %
    of wall time; the finding says both, labelled."""
    rec = Recording()
    _idle_capture(rec, 5.0)
    _stacks(rec, 8.0, _stacks_detail(idle_pct=20.0, stall_pct=75.0, forward_pct=25.0))
    found = top(rec, 0, 10)
    stall = next(f for f in found if f.cause == "host-stall")
    assert found[0] is stall
    assert stall.explains_pct == pytest.approx(60.0)  # 75 % of the 80 % busy samples
    assert "`zq_detokenize_planted_stall`" in stall.title
    assert "60 % of wall time (75 % of busy samples)" in stall.title
    # the rest of the host wait is launch work: launch-bound below it
    assert [f.cause for f in found][:2] == ["host-stall", "launch-bound"]


def test_no_host_finding_when_the_gpu_is_busy():
    """Top-down: a busy GPU (CUDA graphs) with a stacks record full of Python
    reports no host-side cause, whatever the stacks say."""
    from tests.core.test_triage_real import GRAPH

    rec = Recording()
    rec.feed(ev.ProfileCaptured(capture_id="prof1", host="gpu", summary=summarize_files(GRAPH),
                                t=5.0))
    _stacks(rec, 8.0, _stacks_detail(idle_pct=5.0, stall_pct=90.0, forward_pct=10.0))
    causes = {f.cause for f in top(rec, 0, 10)}
    assert not {"host-stall", "launch-bound", "host-sync"} & causes


def test_stacks_of_an_exited_server_do_not_join_the_new_one():
    rec = Recording()
    _stacks(rec, 8.0, _stacks_detail(idle_pct=20.0, stall_pct=75.0, forward_pct=25.0))
    rec.feed(ev.ServerEvent(server="s", host="gpu", state="starting", t=20.0))
    _idle_capture(rec, 30.0)
    phases = triage(rec, 0, 40)
    last = phases[-1]
    assert "host-stall" not in {f.cause for f in last.findings}
    # the host is late, and the stacks to say where are of the old process: take new ones
    lead = next(f for f in last.findings if f.next is not None and f.next.kind == "stacks")
    assert lead.cause == "launch-bound"


# --- the engine's log ---------------------------------------------------------


def test_kv_pressure_from_retractions_and_a_full_cache():
    lines = [(float(t), [decode_line(60, 12, 0.99)] + ([RETRACT] if t % 10 == 0 else []))
             for t in range(1, 61)]
    found = top(log_recording(lines))
    kv = next(f for f in found if f.cause == "kv-pressure")
    assert "6 × \"KV cache pool is full" in kv.evidence[0].text
    assert kv.explains_pct is not None and kv.explains_pct >= 15
    assert "queueing" not in {f.cause for f in found}  # the queue is the full cache's


def test_a_rare_retraction_is_fine():
    lines = [(float(t), [decode_line(60, 0, 0.6)] + ([RETRACT] if t == 30 else []))
             for t in range(1, 121)]
    assert "kv-pressure" not in {f.cause for f in top(log_recording(lines))}


def test_queueing_with_room_is_the_servers():
    lines = [(float(t), [decode_line(16, 48, 0.4)]) for t in range(1, 31)]
    q = next(f for f in top(log_recording(lines)) if f.cause == "queueing")
    assert q.explains_pct == pytest.approx(75.0)
    assert "KV room" in q.title


# --- NVML: clocks ----------------------------------------------------------------


def test_a_busy_gpu_held_at_its_power_cap_is_gpu_throttle():
    rec = Recording()
    for t in range(1, 31):
        gpu = GpuSample(index=0, name="NVIDIA H200", util_pct=99.0, power_w=700.0,
                        sm_clock_mhz=1386.0 if t % 2 else 1980.0, sm_clock_max_mhz=1980.0,
                        throttle=["sw_power_cap"] if t % 2 else [])
        rec.feed(ev.HostSample(host="gpu", gpus=[gpu], t=float(t)))
    found = top(rec)
    thr = next(f for f in found if f.cause == "gpu-throttle")
    assert "sw_power_cap" in thr.title
    # slowed half the time to 70 % of the clock: 15 % of the time lost
    assert thr.explains_pct == pytest.approx(15.0)
    assert "SM clock at 70 % of its max" in thr.evidence[0].text


def test_an_idle_gpu_lowering_its_clocks_costs_nothing():
    rec = Recording()
    for t in range(1, 31):
        gpu = GpuSample(index=0, util_pct=3.0, throttle=["sw_power_cap", "gpu_idle"])
        rec.feed(ev.HostSample(host="gpu", gpus=[gpu], t=float(t)))
    assert "gpu-throttle" not in {f.cause for f in top(rec)}


# --- ranking and "not enough evidence" -------------------------------------------


def test_no_evidence_says_what_to_measure():
    lines = [(float(t), [decode_line(32, 0, 0.5)]) for t in range(1, 31)]
    [lead] = top(log_recording(lines))
    assert lead.cause == "need-evidence" and not lead.confirmed
    assert lead.next is not None and lead.next.kind == "capture"


def test_findings_rank_by_share_and_drop_below_three_percent():
    fs = [Finding("a", "a", 2.0), Finding("b", "b", 40.0), Finding("c", "c", None,
                                                                   confirmed=False),
          Finding("d", "d", 16.0)]
    out = ranked(fs)
    assert [f.cause for f in out] == ["b", "d", "c"]
    assert [f.severity for f in out[:2]] == ["high", "high"]
    assert Finding("e", "e", 3.0).severity == "moderate"


# --- CPU contention: only under a host-side finding ---------------------------


@pytest.mark.parametrize("idle_gpu", [True, False])
def test_cpu_throttle_only_under_a_late_host(idle_gpu):
    from tests.core.test_triage_real import EAGER, GRAPH

    rec = Recording()
    rec.feed(ev.ProfileCaptured(capture_id="prof1", host="gpu",
                                summary=summarize_files(EAGER if idle_gpu else GRAPH), t=5.0))
    for t in range(1, 11):
        rec.feed(ev.HostSample(host="gpu", cpu_pct=100.0, cpu_psi_some=40.0,
                               cpu_throttled_pct=25.0, t=float(t)))
    found = top(rec, 0, 10)
    cpu = [f for f in found if f.cause == "cpu-throttle"]
    if idle_gpu:
        [f] = cpu
        launch = next(x for x in found if x.cause == "launch-bound")
        # the host loses 40 % of the time (system PSI: no cgroup reading of time):
        # cpu-throttle takes that much of launch-bound, launch-bound keeps the rest
        assert f.explains_pct == pytest.approx(min(40.0, f.explains_pct + launch.explains_pct))
        assert f.evidence[0].text.startswith("the host loses 40 % of the time waiting for a CPU")
        assert "system PSI" in f.evidence[0].text and f.evidence[0].source == "psi"
        # its share is part of launch-bound's, read on the capture: the capture evidences it
        assert ("capture", "prof1") in {(e.witness, e.source) for e in f.evidence}
    else:
        assert cpu == []


# --- cpu-throttle: the part of each host-side parent that waits for a CPU -------


def _host_parents():
    """The host-side findings of one window: disjoint shares of the host's wait."""
    from perftriage.core.model.findings import NextStep

    return [Finding("host-stall", "stall", 30.0), Finding("host-sync", "sync", 10.0),
            Finding("need-evidence", "need stacks", 8.0, confirmed=False,
                    next=NextStep("stacks", [], "name the frame")),
            Finding("need-evidence", "need a capture", 20.0, confirmed=False,
                    next=NextStep("capture", [], "the timeline"))]


def _contended(psi: float | None = None, throttled: float | None = None,
               cgroup_psi: float | None = None, throttled_time: float | None = None):
    from perftriage.core.triage.witnesses import Witnesses

    return Witnesses(host="gpu", start=0, end=30, cpu_psi_some=psi, cpu_throttled_pct=throttled,
                     cpu_psi_some_cgroup=cgroup_psi, cpu_throttled_time_pct=throttled_time)


def test_cpu_throttle_takes_its_part_out_of_each_host_side_parent():
    """Top-down: the host loses 24 % of the time to waiting for a CPU (its
    cgroup's throttled time); the host-side parents are 48 % together, so
    cpu-throttle takes 24 % and each parent gives up its proportional part
    (half); the time they explain together is unchanged."""
    from perftriage.core.triage.host_side import cpu_throttle_finding

    found = _host_parents()
    cpu = cpu_throttle_finding(_contended(psi=90.0, throttled=100.0, cgroup_psi=70.0,
                                          throttled_time=24.0), found)
    assert cpu is not None and cpu.cause == "cpu-throttle"
    shares = {(f.cause, f.next.kind if f.next else None): f.explains_pct for f in found}
    assert shares[("host-stall", None)] == pytest.approx(15.0)
    assert shares[("host-sync", None)] == pytest.approx(5.0)
    assert shares[("need-evidence", "stacks")] == pytest.approx(4.0)
    assert shares[("need-evidence", "capture")] == 20.0  # not a host-side parent: untouched
    assert cpu.explains_pct == pytest.approx(24.0)
    assert sum(f.explains_pct or 0 for f in found) + cpu.explains_pct == pytest.approx(68.0)
    texts = [e.text for e in cpu.evidence]
    assert texts[0] == ("the host loses 24 % of the time waiting for a CPU: its cgroup throttled "
                        "24 % of the time (cpu.stat throttled_usec), median — the reading used")
    assert ("its cgroup throttled in 100 % of its CFS periods (cpu.stat nr_throttled / "
            "nr_periods: a share of periods, not of time), median") in texts
    assert ("of the host's lateness (48 % of the time) 24 % is waiting for a CPU: host-stall "
            "30 % → 15 % of the time, 15 % is cpu-throttle's") in texts
    assert found[0].evidence[-1].text == ("15 % of the time is waiting for a CPU, counted "
                                          "under cpu-throttle")
    assert found[0].evidence[-1].source == "cgroup"


@pytest.mark.parametrize("readings, lost, used", [
    # the cgroup's throttled time first (the H200's quotas: it read the contention's cost)
    (dict(throttled_time=24.0, cgroup_psi=70.0, psi=90.0, throttled=100.0), 24.0,
     "cpu_throttled_time_pct"),
    # no quota in force (or below 5 %): the cgroup's own PSI, not the system's
    (dict(throttled_time=3.0, cgroup_psi=50.0, psi=95.0, throttled=100.0), 50.0,
     "cpu_psi_some_cgroup"),
    (dict(cgroup_psi=50.0, psi=95.0), 50.0, "cpu_psi_some_cgroup"),
    # the cgroup's tasks do not wait: others' waits say nothing of the engine
    (dict(cgroup_psi=8.0, psi=95.0, throttled=100.0), 0.0, None),
    # neither cgroup reading: the system's PSI or the share of periods, the larger
    (dict(psi=55.0, throttled=60.0), 60.0, "cpu_throttled_pct"),
    (dict(psi=55.0, throttled=4.0), 55.0, "cpu_psi_some"),
    # the throttled time known and small: the share of periods is not used
    (dict(throttled_time=2.0, throttled=100.0), 0.0, None),
    (dict(throttled_time=2.0, throttled=100.0, psi=30.0), 30.0, "cpu_psi_some"),
    (dict(throttled_time=250.0), 100.0, "cpu_throttled_time_pct"),  # clamped
])
def test_the_share_lost_to_the_cpu_is_read_from_the_best_reading(readings, lost, used):
    from perftriage.core.triage.host_side import cpu_lost

    assert cpu_lost(_contended(**readings)) == (pytest.approx(lost), used)


def test_above_half_the_time_waiting_cpu_throttle_tops_its_parent():
    from perftriage.core.triage.host_side import cpu_throttle_finding

    stall = Finding("host-stall", "stall", 47.0)
    cpu = cpu_throttle_finding(_contended(psi=55.0, throttled_time=30.0), [stall])
    assert cpu is not None
    assert [f.cause for f in ranked([stall, cpu])] == ["cpu-throttle", "host-stall"]
    assert (cpu.explains_pct, stall.explains_pct) == (pytest.approx(30.0), pytest.approx(17.0))
    stall = Finding("host-stall", "stall", 47.0)  # losing more than the parent: all of it
    cpu = cpu_throttle_finding(_contended(throttled_time=80.0), [stall])
    assert cpu is not None and (cpu.explains_pct, stall.explains_pct) == (47.0, 0.0)
    stall = Finding("host-stall", "stall", 47.0)
    cpu = cpu_throttle_finding(_contended(psi=20.0), [stall])  # a fifth: the stall stays on top
    assert cpu is not None
    assert [f.cause for f in ranked([stall, cpu])] == ["host-stall", "cpu-throttle"]


def test_cpu_throttle_that_takes_all_of_its_parent_keeps_the_parent_s_witness():
    """A loaded host (PSI above the host's lateness): cpu-throttle takes all
    of launch-bound, which falls below the list; the capture it was read on
    is then cpu-throttle's evidence, not lost with it."""
    from perftriage.core.triage.host_side import cpu_throttle_finding
    from perftriage.core.model.findings import Evidence

    launch = Finding("launch-bound", "eager launches", 12.0, evidence=[
        Evidence("capture", "host wait 12 % of the step", 5.0, "prof1"),
        Evidence("capture", "eager launches", 5.0, "prof1")])
    cpu = cpu_throttle_finding(_contended(psi=60.0), [launch])
    assert cpu is not None and cpu.explains_pct == 12.0 and launch.explains_pct == 0.0
    assert ranked([launch, cpu]) == [cpu]
    witnessed = [e for e in cpu.evidence if e.witness == "capture"]
    assert len(witnessed) == 1  # one line per witness taken, not each of its lines
    assert witnessed[0].source == "prof1" and witnessed[0].at == 5.0
    assert witnessed[0].text == "the host's lateness, as launch-bound: host wait 12 % of the step"
    assert cpu.evidence[0].text.startswith("the host loses 60 % of the time waiting for a CPU")


@pytest.mark.parametrize("readings", [
    dict(), dict(psi=9.9, throttled=4.9), dict(psi=0.0, throttled=0.0),
    dict(cgroup_psi=9.9, psi=90.0, throttled=90.0), dict(throttled_time=4.9, throttled=100.0)])
def test_below_the_thresholds_the_parents_keep_their_share(readings):
    from perftriage.core.triage.host_side import cpu_throttle_finding

    found = _host_parents()
    assert cpu_throttle_finding(_contended(**readings), found) is None
    assert [f.explains_pct for f in found] == [30.0, 10.0, 8.0, 20.0]
    assert all(len(f.evidence) == 0 for f in found)


def test_no_host_side_parent_no_cpu_throttle():
    from perftriage.core.triage.host_side import cpu_throttle_finding

    found = [Finding("kernel-below-roofline", "k", 40.0, confirmed=False)]
    assert cpu_throttle_finding(_contended(psi=90.0, throttled=90.0), found) is None
    assert found[0].explains_pct == 40.0


def test_psi_and_cgroup_lines_parse():
    from perftriage.core.parse.proc import parse_proc_frame, throttled_pct

    a = parse_proc_frame(["psi some avg10=12.50 avg60=3.00 avg300=1.00 total=9",
                          "cg nr_periods 100", "cg nr_throttled 10"])
    b = parse_proc_frame(["cg nr_periods 300", "cg nr_throttled 60"])
    assert a.psi_some == 12.5 and (a.cg_periods, a.cg_throttled) == (100, 10)
    assert throttled_pct(a, b) == 25.0
    assert throttled_pct(None, b) is None
    assert parse_proc_frame(["psi some avg10=nan total=1"]).psi_some is None


def test_the_cgroups_own_pressure_and_throttled_time_parse():
    """cpu.pressure's first line as ``cgpsi``, cpu.stat's throttled_usec, the
    clock (/proc/uptime's first field): the throttled share of wall time
    between two frames, clamped; None where no CFS period ran (no quota)."""
    from perftriage.core.parse.proc import parse_proc_frame, throttled_time_pct

    a = parse_proc_frame(["cgpsi some avg10=49.70 avg60=40.00 avg300=9.00 total=123",
                          "uptime 100.00", "cg nr_periods 100", "cg nr_throttled 100",
                          "cg throttled_usec 1000000"])
    b = parse_proc_frame(["uptime 102.00", "cg nr_periods 120", "cg nr_throttled 120",
                          "cg throttled_usec 2600000"])
    assert (a.cg_psi_some, a.uptime_s, a.cg_throttled_us) == (49.7, 100.0, 1_000_000)
    assert throttled_time_pct(a, b) == 80.0
    assert throttled_time_pct(None, b) is None and throttled_time_pct(b, a) is None
    many = parse_proc_frame(["uptime 103", "cg nr_periods 130", "cg throttled_usec 9600000"])
    assert throttled_time_pct(b, many) == 100.0  # throttled on several CPUs at once
    idle = parse_proc_frame(["uptime 104", "cg nr_periods 130", "cg throttled_usec 9600000"])
    assert throttled_time_pct(many, idle) is None  # no period ran: no quota in force


@pytest.mark.parametrize("line", [
    "cg throttled_usec -5", "cg throttled_usec 1e6", "cg throttled_usec ²", "cg throttled_usec",
    "cg throttled_usec " + "9" * 5000, "uptime nan", "uptime inf", "uptime -1", "uptime x",
    "cgpsi some avg10=101", "cgpsi some avg10=nan", "cgpsi full avg10=5", "cg nr_periods ٣"])
def test_hostile_cgroup_lines_are_skipped(line):
    from perftriage.core.parse.proc import parse_proc_frame

    f = parse_proc_frame([line])
    assert (f.cg_throttled_us, f.uptime_s, f.cg_psi_some, f.cg_periods) == (None,) * 4


def _gap_samples(rec: Recording, t0: int, t1: int, gap: float, ratio: float) -> None:
    for t in range(t0, t1):
        rec.feed(ev.GapSample(host="gpu", gap=gap, traffic_ratio=ratio, idle_pct=40.0,
                              dram_busy_pct=60.0, t=float(t)))


@pytest.mark.parametrize("gap_after, state", [(1.5, "resolved"), (9.0, "gone")])
def test_a_finding_gone_after_a_restart_is_resolved_only_if_the_step_got_faster(gap_after, state):
    rec = Recording()
    _gap_samples(rec, 1, 30, gap=3.0, ratio=2.5)
    rec.feed(ev.ServerEvent(server="s", host="gpu", state="starting", t=30.0))
    _gap_samples(rec, 31, 60, gap=gap_after, ratio=1.0)
    before, after = triage(rec, 0, 60)
    assert before.findings[0].cause == "wasted-traffic"
    [e] = after.earlier
    assert e.state == state
    if state == "resolved":
        assert e.text == ("wasted-traffic: resolved — the gap at 0:59 no longer finds it; "
                             "outcome: gap 3.0 → 1.5x ▲, p < 0.001")
        assert before.findings[0].resolved == e.text
    else:
        assert "no longer found by the gap at 0:59, but the step got slower — gap 3.0 → 9.0x ▼" \
            in e.text


def test_a_lead_leaves_out_what_confirmed_causes_explain():
    """A busy GPU slowed by its power cap (the scenario's figures): the
    kernels-below-roofline lead is what is left above the floor once the
    throttle's share is taken out — here nothing worth reporting."""
    from perftriage.core.triage.diagnose import diagnose
    from perftriage.core.triage.witnesses import Witnesses

    w = Witnesses(host="gpu", start=0, end=30, gap=1.63, gpu_util_pct=99.0, decode_tps=900.0,
                  throttled_share=1.0, throttle_reasons=("sw_power_cap",), throttle_clock=0.62)
    found = diagnose(w)
    assert found[0].cause == "gpu-throttle" and found[0].explains_pct == pytest.approx(38.0)
    assert "kernel-below-roofline" not in {f.cause for f in found}  # 38.3 - 38 % is left
    w.throttled_share = 0.5  # half the time slowed: the rest is the lead's
    lead = next(f for f in diagnose(w) if f.cause == "kernel-below-roofline")
    assert lead.explains_pct == pytest.approx(99.0 * (1 - 1 / 1.63) - 19.0, abs=0.1)


# --- the GPU's memory full with the KV cache -------------------------------------


def memory_recording(mem_pct: float, usage: float, queued: int = 0, retract_every: int = 0,
                     running: int = 57, seconds: int = 60) -> Recording:
    """The log's decode lines (and retractions) beside host samples whose 8
    GPUs read ``mem_pct`` % of NVML's memory used (the simulated GPUs' total)."""
    from perftriage.simulator.nvml_sim import MEM_TOTAL_MIB

    lines = [(float(t), [decode_line(running, queued, usage)]
              + ([RETRACT] if retract_every and t % retract_every == 0 else []))
             for t in range(1, seconds + 1)]
    rec = log_recording(lines)
    used = MEM_TOTAL_MIB * mem_pct / 100.0
    for t in range(1, seconds + 1):
        rec.feed(ev.HostSample(host="gpu", t=float(t), gpus=[
            GpuSample(index=i, util_pct=98.0, mem_used_mib=used - 300.0 * (i % 2),
                      mem_total_mib=float(MEM_TOTAL_MIB)) for i in range(8)]))
    return rec


def test_gpu_memory_pressure_on_the_scenario():
    """The demo's scenario as its server and simulated NVML show it: 98 % of
    the memory used, token usage 0.98, a retraction every 4 s and a queue;
    kv-pressure's fix (more --mem-fraction-static) has no memory to take, so
    the finding is this one, with the KV cache's cost, the figures and times."""
    import random

    from perftriage.simulator.nvml_sim import MEM_TOTAL_MIB, gpu_readings
    from perftriage.simulator.scenarios import SCENARIOS

    sc = SCENARIOS["gpu-memory-pressure"].planted()
    gpus = gpu_readings(sc, "flashinfer_cutlass", 8, random.Random(1))["gpus"]
    mem = max(g["mem_used_mib"] for g in gpus) / MEM_TOTAL_MIB * 100.0
    assert mem >= 97.0
    rec = memory_recording(mem, sc.token_usage(sc.running), queued=sc.queued,
                           retract_every=int(sc.retract_every_s), running=sc.running)
    found = top(rec)
    first = found[0]
    assert first.cause == "gpu-memory-pressure", [f.line() for f in found]
    assert "kv-pressure" not in {f.cause for f in found}  # its share is this finding's
    assert first.explains_pct is not None and first.explains_pct >= 15
    assert first.severity == "high" and not first.against
    texts = [e.text for e in first.evidence]
    assert texts[0].startswith(f"GPU memory used {mem:.1f} % of the total on the fullest GPU")
    assert any("15 × \"KV cache pool is full" in t for t in texts), texts
    assert any(t.startswith("token usage 0.98 (median)") for t in texts), texts
    assert all(e.at == 60.0 for e in first.evidence)  # when: the end of the phase read
    assert any("--kv-cache-dtype fp8_e4m3" in x for x in first.fix)
    assert any("--mem-fraction-static down" in x and "--gpu-memory-utilization" in x
               for x in first.fix)
    assert first.next is not None and first.next.args == ["avail.mem"]


@pytest.mark.parametrize("mem_pct,usage,retract,expect", [
    (96.0, 0.99, 10, "kv-pressure"),  # memory left: the KV cache's own fix holds
    (98.5, 0.40, 0, None),  # memory full, the KV cache has room: no pressure
    (98.5, 0.60, 0, None),
])
def test_gpu_memory_pressure_needs_both_memory_and_kv(mem_pct, usage, retract, expect):
    causes = {f.cause for f in top(memory_recording(mem_pct, usage, retract_every=retract))}
    assert "gpu-memory-pressure" not in causes
    if expect is not None:
        assert expect in causes


def test_gpu_memory_pressure_with_nothing_lost_yet_has_no_share():
    """Memory and KV high (0.92) but no retraction and no queue: said, with
    the "against" line, and never the top problem."""
    found = top(memory_recording(98.5, 0.92))
    mem = next(f for f in found if f.cause == "gpu-memory-pressure")
    assert mem.explains_pct is None and not mem.is_problem
    assert mem.against and "no retraction and no queue in 60 s" in mem.against[0].text
    assert "nothing lost yet" in mem.title


def test_gpu_memory_pressure_reads_the_engine_s_kv_usage_without_a_log():
    from perftriage.core.parse.engine_metrics import EngineSnapshot

    rec = memory_recording(98.5, 0.99, seconds=0)
    for t in range(1, 61):
        rec.feed(ev.HostSample(host="gpu", t=float(t), gpus=[GpuSample(
            index=0, util_pct=98.0, mem_used_mib=96500.0, mem_total_mib=97887.0)]))
        rec.feed(ev.EngineSample(host="gpu", source="e", t=float(t), snapshot=EngineSnapshot(
            engine="vllm", gauges={"running": 40.0, "queued": 10.0, "token_usage": 0.97})))
    mem = next(f for f in top(rec) if f.cause == "gpu-memory-pressure")
    assert mem.explains_pct == 20.0  # the share of requests that wait (10 of 50)
    assert any(e.witness == "engine" and "token usage 0.97" in e.text for e in mem.evidence)


def test_gpu_memory_pressure_not_on_the_real_h200_recordings():
    """The real H200 recordings read 11-91 % of the GPUs' memory and a KV
    cache near empty: the rule stays silent on all of them."""
    from perftriage.core.compare.load import load
    from perftriage.core.triage.witnesses import witnesses
    from tests.support.helpers import FIXTURES

    for path in (FIXTURES / "gpm" / "h200-run" / "transcript.jsonl",
                 FIXTURES / "gpm" / "h200-run2" / "transcript.jsonl",
                 FIXTURES / "checks" / "h200-idle-run" / "transcript.jsonl",
                 FIXTURES / "session-h200-standin.jsonl",
                 FIXTURES / "report" / "investigation.jsonl"):
        rec = load(path)
        for phase in triage(rec):
            w = witnesses(rec, phase.host, phase.start, phase.end)
            assert w.gpu_mem_pct is not None and w.gpu_mem_pct < 97.0, (path, w.gpu_mem_pct)
            assert "gpu-memory-pressure" not in {f.cause for f in phase.findings}, path
