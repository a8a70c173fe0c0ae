"""Cost of the cockpit's live triage (not collected by pytest).

    python -m tests.bench.bench_triage_live [--seconds 300] [--gpus 8] [--rounds 30]

A live session as the cockpit feeds it, through the real ``Session.emit``
and the baseline's live recording: one host with 8 GPUs, each second a
host sample (NVML utilisation, power, clocks), GPM counters and a live gap
sample, four SGLang decode log batches and an engine scrape; a profile
capture (the real eager H200 traces), a stacks record and an ncu result
(the real H200 probe) inside the window, a server restart half-way (two
phases: the earlier lines are computed) and a baseline marked on the first
phase. Measured in the same run: one evaluation of the live triage
(``LiveTriage.evaluate``: every phase of the host, its findings, the earlier
phase's and the baseline's verdicts) against one ``Baseline.result()`` (the
baseline against the last 30 s, what the cockpit's views already compute
once a second), each its cache cleared, CPU time, median of ``--rounds``.
At one evaluation a second, CPU seconds per evaluation is the share of a
core. Target: <= 1 % of a core.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from perftriage.core.model import events as ev
from perftriage.core.parse.gpu_sample import GpuSample
from perftriage.core.profile.summarize import summarize_files
from perftriage.services.compare.baseline import Baseline
from perftriage.services.investigation.session import Session
from perftriage.services.triage.live import LiveTriage
from tests.bench.table import print_table

FIX = Path(__file__).resolve().parents[1] / "fixtures"
EAGER = [FIX / "profile" / f"eager-TP-{r}.trace.json.gz" for r in (0, 1)]
TARGET_PCT_OF_CORE = 1.0
HOST = "h200"
SGLANG = "[2026-12-04 10:00:00 TP0]"


def _decode(gen: float) -> str:
    return (f"{SGLANG} Decode batch, #running-req: 48, #token: 20000, token usage: 0.50, "
            f"cuda graph: False, gen throughput (token/s): {gen:.2f}, #queue-req: 0")


def _at(session: Session, t: float, e: ev.Event) -> None:
    session.continue_clock(t)
    session.emit(e)


def build(seconds: int, gpus: int) -> tuple[Session, Baseline, LiveTriage]:
    session = Session(name="bench")
    baseline = Baseline(session)
    live = LiveTriage(session, baseline)
    _at(session, 0.0, ev.LogSourceOpened(source_id="l1", host=HOST, path="/srv/sglang.log"))
    summary = summarize_files(EAGER)
    ncu = json.loads((FIX / "ncu" / "probe-ncu-moe-step.json").read_text())["detail"]
    stacks_detail = {"processes": [], "top": None, "mode": "record", "seconds": 3.0, "rate": 100}
    from tests.core.test_triage_rules import _stacks_detail

    stacks_detail = _stacks_detail(20.0, 75.0, 25.0)
    half = seconds // 2
    for s in range(1, seconds + 1):
        t = float(s)
        gen = 900.0 if s < half else 2900.0
        util = 15.0 if s < half else 96.0
        _at(session, t, ev.HostSample(host=HOST, cpu_pct=30.0, cpu_psi_some=1.0, gpus=[
            GpuSample(index=i, name="NVIDIA H200", util_pct=util, power_w=400.0 + i,
                      sm_clock_mhz=1980.0, sm_clock_max_mhz=1980.0) for i in range(gpus)]))
        _at(session, t + 0.1, ev.GpuCountersSample(host=HOST, source="nvml-gpm", gpus=[
            ev.GpuCounters(index=i, dram_busy_pct=40.0, dram_bw_gbs=1900.0, sm_active_pct=50.0)
            for i in range(gpus)]))
        _at(session, t + 0.2, ev.GapSample(host=HOST, gap=3.0 if s < half else 1.6,
                                           traffic_ratio=1.1, idle_pct=60.0))
        for k in range(4):
            _at(session, t + 0.25 * k, ev.LogLines(source_id="l1", lines=[_decode(gen)] * 8))
        if s == 20:
            _at(session, t, ev.ProfileCaptured(capture_id="prof1", host=HOST, summary=summary))
        if s == 25:
            _at(session, t, ev.ProbeQueued(probe_id="p1", host=HOST, kind="stacks", args=[]))
            _at(session, t + 0.5, ev.ProbeFinished(probe_id="p1", status="ok",
                                                   detail=stacks_detail))
        if s == half:
            _at(session, t, ev.ServerEvent(server="sglang", host=HOST, state="starting"))
        if s == half + 20:
            _at(session, t, ev.ProfileCaptured(capture_id="prof2", host=HOST, summary=summary))
            _at(session, t, ev.ProbeQueued(probe_id="p2", host=HOST, kind="ncu", args=[]))
            _at(session, t + 0.5, ev.ProbeFinished(probe_id="p2", status="ok", detail=ncu))
    baseline.mark(f"0:05-0:{min(59, half - 5):02d}")
    _at(session, float(seconds) + 0.5, ev.NoteAdded(text="end"))
    return session, baseline, live


def cpu(fn, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.process_time()
        fn()
        samples.append(time.process_time() - start)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=300)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=30)
    a = ap.parse_args()
    session, baseline, live = build(a.seconds, a.gpus)
    now = session.state.last_t
    found = live.evaluate(now)
    phases_seen = found[HOST].phase
    findings = [f.cause for f in found[HOST].findings]
    earlier = len(found[HOST].earlier)

    def result() -> None:
        baseline._cache = None  # recomputed, as once a second in the cockpit
        baseline.result()

    def evaluate() -> None:
        live.evaluate(now)

    base = cpu(result, a.rounds)
    own = cpu(evaluate, a.rounds)
    rows = [
        (f"baseline: one `Baseline.result()` ({a.seconds} s of 1 host × {a.gpus} GPUs)",
         f"{base * 1000:.2f}", f"{base * 100:.2f} % of a core at 1 Hz"),
        (f"one live triage evaluation: phase from {phases_seen.start:.0f} s, "
         f"{len(findings)} findings ({', '.join(findings[:3])}), {earlier} earlier lines",
         f"{own * 1000:.2f}",
         f"{own / base:.2f}× baseline; {own * 100:.2f} % of a core at 1 Hz "
         f"(target <= {TARGET_PCT_OF_CORE:g} %)"),
    ]
    print_table("perftriage live triage, CPU per evaluation, median of "
                f"{a.rounds}", "ms", rows)


if __name__ == "__main__":
    main()
