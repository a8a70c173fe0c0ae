"""Verdicts like alerting rules, per scope, recorded as events: pending for
``for``, no data naming the signal, errors, per-GPU counts; history functions;
the signals of probes, logs and engines; live and replayed verdicts agree."""

from __future__ import annotations

import pytest

from perftriage.core.checks.verdicts import Evaluator, compile_scoped
from perftriage.core.checks.expr import CheckError
from perftriage.core.model import events as ev
from perftriage.core.model.check_state import count_text, overall
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState


def gpu_state(busy: list[float], t: float = 0.0, host: str = "node1",
              state: SessionState | None = None) -> SessionState:
    state = state or SessionState()
    apply(state, ev.HostSample(t=t, host=host, cpu_pct=5.0, gpus=[
        ev.GpuSample(index=i, name="H200", util_pct=90.0, sm_clock_mhz=1980.0,
                     sm_clock_max_mhz=1980.0) for i in range(len(busy))]))
    apply(state, ev.GpuCountersSample(t=t, host=host, source="nvml-gpm", gpus=[
        ev.GpuCounters(index=i, dram_busy_pct=b, peak_gbs=4800.0) for i, b in enumerate(busy)]))
    return state


def hyp(state: SessionState, check: str, for_s: float = 0.0, scope: str = "",
        hyp_id: str = "h1") -> None:
    apply(state, ev.HypothesisAdded(hyp_id=hyp_id, title=f"test {hyp_id}", check=check,
                                    for_s=for_s, scope=scope))


def step(state: SessionState, evaluator: Evaluator, now: float) -> list[ev.CheckVerdict]:
    changes = evaluator.tick(state, now)
    for c in changes:
        apply(state, c)
    return changes


def test_per_gpu_verdicts_and_the_count():
    state = gpu_state([80.0, 75.0, 10.0, 90.0, 70.0, 5.0, 60.0, 55.0])
    hyp(state, "gpu.dram_busy_pct >= 50")
    changes = step(state, Evaluator(), 1.0)
    assert len(changes) == 8
    h = state.hypothesis("h1")
    assert h.verdicts["node1 GPU 2"].verdict == "refuted"
    assert h.verdicts["node1 GPU 2"].values == {"gpu.dram_busy_pct": 10.0}
    assert h.verdicts["node1 GPU 0"].reason == "gpu.dram_busy_pct = 80"
    assert overall(h.verdicts) == "supported"
    assert count_text(h.verdicts) == "supported on 6/8 GPUs (GPU 2, 5 not)"


def test_count_over_hosts_names_the_host():
    state = gpu_state([80.0, 10.0])
    gpu_state([90.0], host="node2", state=state)
    hyp(state, "gpu.dram_busy_pct >= 50")
    step(state, Evaluator(), 1.0)
    assert count_text(state.hypothesis("h1").verdicts) == \
        "supported on 2/3 GPUs (node1 GPU 1 not)"


def test_pending_until_for_then_supported_and_back_to_refuted():
    state = gpu_state([80.0])
    hyp(state, "gpu.dram_busy_pct >= 50", for_s=3.0)
    e = Evaluator()
    seen = []
    for now in (1.0, 2.0, 3.0, 4.0):
        gpu_state([80.0], t=now, state=state)
        seen += [(now, c.verdict) for c in step(state, e, now)]
    gpu_state([20.0], t=5.0, state=state)
    seen += [(5.0, c.verdict) for c in step(state, e, 5.0)]
    assert seen == [(1.0, "pending"), (4.0, "supported"), (5.0, "refuted")]
    log = state.hypothesis("h1").verdict_log
    assert [c.verdict for c in log] == ["pending", "supported", "refuted"]
    assert log[1].reason == "gpu.dram_busy_pct = 80 (true for 3 s)"


def test_a_false_moment_resets_the_pending_clock():
    state = gpu_state([80.0])
    hyp(state, "gpu.dram_busy_pct >= 50", for_s=2.0)
    e = Evaluator()
    verdicts = []
    for now, busy in [(1, 80.0), (2, 20.0), (3, 80.0), (4, 80.0), (5, 80.0)]:
        gpu_state([busy], t=now, state=state)
        verdicts += [(now, c.verdict) for c in step(state, e, now)]
    assert verdicts == [(1, "pending"), (2, "refuted"), (3, "pending"), (5, "supported")]


def test_no_data_names_the_missing_or_stale_signal():
    state = gpu_state([80.0], t=0.0)
    hyp(state, "gap.traffic_ratio >= 1.5", hyp_id="h1")
    hyp(state, "gpu.dram_busy_pct >= 50", hyp_id="h2")
    e = Evaluator()
    step(state, e, 1.0)
    v = state.hypothesis("h1").verdicts["node1"]
    assert v.verdict == "no data"
    assert v.reason == "gap.traffic_ratio missing (no gap sample from node1)"
    assert state.hypothesis("h2").verdicts["node1 GPU 0"].verdict == "supported"
    step(state, e, 30.0)  # the sampler stopped 30 s ago
    v = state.hypothesis("h2").verdicts["node1 GPU 0"]
    assert v.verdict == "no data" and v.reason == "gpu.dram_busy_pct stale (30 s old)"


def test_error_verdicts_say_why():
    state = gpu_state([80.0])
    apply(state, ev.GapSample(t=0.5, host="node1", gap=3.0, batch=0, traffic_ratio=1.0))
    hyp(state, "gap.gap / gap.batch > 1", hyp_id="h1")
    hyp(state, "gap.gap > 1 and gap.trafic_ratio > 1", hyp_id="h2")  # saved by hand, unvetted
    step(state, Evaluator(), 1.0)
    v = state.hypothesis("h1").verdicts["node1"]
    assert v.verdict == "error" and "ZeroDivisionError" in v.reason
    v = state.hypothesis("h2").verdicts[""]
    assert v.verdict == "error" and "unknown signal gap.trafic_ratio" in v.reason


def test_scope_must_fit_the_signals():
    with pytest.raises(CheckError, match="gpu.dram_busy_pct is per gpu"):
        compile_scoped("gpu.dram_busy_pct > 1", "host")
    assert compile_scoped("gap.gap > 1", "host:node*").pattern == "node*"
    assert compile_scoped("gap.gap > 1", "gpu").scope == "gpu"  # finer is fine


def test_scope_pattern_limits_the_hosts():
    state = gpu_state([80.0])
    gpu_state([90.0], host="other", state=state)
    hyp(state, "gpu.dram_busy_pct > 50", scope="gpu:node*")
    step(state, Evaluator(), 1.0)
    assert list(state.hypothesis("h1").verdicts) == ["node1 GPU 0"]


def test_history_functions_over_the_window():
    state = SessionState()
    hyp(state, 'avg(gpu.dram_busy_pct, "3s") >= 50', hyp_id="h1")
    hyp(state, 'rate(gpu.dram_busy_pct, "10s") > 5', hyp_id="h2")
    hyp(state, 'max(gpu.dram_busy_pct, "2s") >= 90', hyp_id="h3")
    e = Evaluator()
    for now, busy in [(1, 90.0), (2, 40.0), (3, 40.0), (4, 40.0)]:
        gpu_state([busy], t=now, state=state)
        step(state, e, now)
        if now == 3:
            assert state.hypothesis("h1").verdicts["node1 GPU 0"].verdict == "supported"  # 56.7
    assert e.values("h1", 'avg(gpu.dram_busy_pct, "3s") >= 50', "node1 GPU 0") == \
        {'avg(gpu.dram_busy_pct, "3s")': 40.0}
    assert e.values("h2", 'rate(gpu.dram_busy_pct, "10s") > 5', "node1 GPU 0") == \
        {'rate(gpu.dram_busy_pct, "10s")': -16.6667}
    assert state.hypothesis("h1").verdicts["node1 GPU 0"].verdict == "refuted"
    assert state.hypothesis("h3").verdicts["node1 GPU 0"].verdict == "refuted"


def test_spread_over_a_hosts_gpus():
    state = gpu_state([80.0, 78.0, 52.0, 81.0])
    hyp(state, "spread(gpu.dram_busy_pct) >= 20")
    step(state, Evaluator(), 1.0)
    v = state.hypothesis("h1").verdicts["node1"]
    assert v.verdict == "supported" and v.values == {"spread(gpu.dram_busy_pct)": 29.0}


def test_probe_log_and_engine_signals():
    state = SessionState()
    apply(state, ev.ProbeQueued(t=0.1, probe_id="p1", host="node1", kind="import",
                                args=["flashinfer.cute"], template="cutedsl-import"))
    apply(state, ev.ProbeFinished(t=0.5, probe_id="p1", status="failed", exit_status=1))
    apply(state, ev.LogSourceOpened(t=0.1, source_id="l1", host="node1", path="/srv.log",
                                    kind="file"))
    apply(state, ev.LogLines(t=0.6, source_id="l1", lines=[
        "[2026-12-01 01:00:54 TP0] Decode batch, #running-req: 3, #token: 12, token usage: 0.01, "
        "cuda graph: True, gen throughput (token/s): 11.66, #queue-req: 0"]))
    hyp(state, 'not probe["cutedsl-import"].ok', hyp_id="h1")
    hyp(state, 'not probe["import flashinfer.cute"].ok and probe["p1"].verdict == "failed"',
        hyp_id="h2")
    hyp(state, "log.running <= 4 and log.gen_tps < 20", hyp_id="h3")
    hyp(state, "engine.itl_p50_ms > 20", hyp_id="h4")
    hyp(state, 'profile.top.name matches "cutedsl"', hyp_id="h5")
    step(state, Evaluator(), 1.0)
    v = {h.hyp_id: h.verdicts for h in state.hypotheses}
    assert v["h1"]["node1"].verdict == "supported"
    assert v["h2"]["node1"].verdict == "supported"
    assert v["h3"]["node1"].values == {"log.running": 3, "log.gen_tps": 11.66}
    assert v["h3"]["node1"].verdict == "supported"
    assert v["h4"][""].reason == "no engine to evaluate on yet"
    assert v["h5"]["session"].verdict == "no data"
    assert v["h5"]["session"].reason == "profile.top.name: no profile captured yet"


def test_changing_the_check_starts_over():
    state = gpu_state([80.0])
    hyp(state, "gpu.dram_busy_pct >= 50")
    e = Evaluator()
    step(state, e, 1.0)
    apply(state, ev.HypothesisUpdated(hyp_id="h1", check="gpu.dram_busy_pct >= 90"))
    assert state.hypothesis("h1").verdicts == {}
    changes = step(state, e, 2.0)
    assert [c.verdict for c in changes] == ["refuted"]
    assert len(state.hypothesis("h1").verdict_log) == 2


def test_verdict_events_survive_the_transcript_round_trip():
    change = ev.CheckVerdict(t=3.0, wall=1.0, hyp_id="h1", scope="node1 GPU 0",
                             verdict="supported", check="gpu.util_pct > 1",
                             values={"gpu.util_pct": 90.0}, reason="gpu.util_pct = 90")
    assert ev.decode(ev.encode(change)) == change


def test_for_takes_durations_and_bare_seconds():
    from perftriage.core.checks.verdicts import for_seconds

    assert for_seconds("10s") == 10 and for_seconds("2m") == 120 and for_seconds("10") == 10
    assert for_seconds(5) == 5 and for_seconds("") == 0 and for_seconds(None) == 0
    for bad in ("soon", "-1", "inf", True):
        with pytest.raises(ValueError):
            for_seconds(bad)


def test_deleted_hypotheses_are_forgotten_by_the_evaluator():
    state = gpu_state([80.0])
    hyp(state, "gpu.dram_busy_pct >= 50", hyp_id="h1")
    hyp(state, "gpu.dram_busy_pct >= 90", hyp_id="h2")
    e = Evaluator()
    step(state, e, 1.0)
    apply(state, ev.HypothesisDeleted(hyp_id="h1"))
    step(state, e, 2.0)
    assert list(e._slots) == [("h2", "gpu.dram_busy_pct >= 90")]
