"""The SIMULATED server of a scenario, piece by piece: its log lines (in
SGLang's format, read by the real parser), a bounded KV cache, and its
SIMULATED GPUs as the cockpit's own NVML readers see them."""

from __future__ import annotations

import random

from perftriage.core.parse import logparse
from perftriage.core.parse.log_metrics import LogMetrics
from perftriage.core.parse.nvsmi import throttle_names
from perftriage.services.sampling.local_sampler import LocalSampler
from perftriage.services.sources.gpm_local import NvmlGpm
from perftriage.simulator.nvml_sim import SimulatedNvml, gpu_readings, installed
from perftriage.simulator.scenarios import GPU_NAME, PEAK_GBS, SCENARIOS
from perftriage.simulator.sglang_metrics import SimulatedSglangMetrics
from perftriage.simulator.sglang_sim import MAX_TOTAL_TOKENS, Steady, startup_lines
from tests.support.sshd import free_port

RATE = 40.0


def lines(scenario: str | None, n: int, seed: int = 1) -> list[str]:
    # as the demo starts it: with the flags that plant it
    sim = Steady(seed=seed, step_s=1.0 / RATE,
                 scenario=SCENARIOS[scenario].planted() if scenario else None)
    return [sim.line() for _ in range(n)]


def decodes(text: list[str]) -> list[logparse.Metric]:
    recs = [logparse.parse_line(ln) for ln in text]
    return [r for r in recs if isinstance(r, logparse.Metric) and r.kind == "decode"]


def test_the_kv_cache_is_bounded_the_token_count_is_its_usage():
    for scenario in (None, "kv-pressure", "queueing"):
        got = lines(scenario, 3000)
        tokens = [int(ln.split("#token: ", 1)[1].split(",", 1)[0]) for ln in got
                  if "Decode batch" in ln]
        usage = [r.token_usage for r in decodes(got)]
        assert max(tokens) <= MAX_TOTAL_TOKENS and len(set(tokens)) < 40
        assert all(abs(t / MAX_TOTAL_TOKENS - u) <= 0.0051 for t, u in zip(tokens, usage, strict=True))


def test_kv_pressure_is_a_full_cache_and_a_retraction_every_4_s():
    got = lines("kv-pressure", int(60 * RATE))  # a minute of log
    m = LogMetrics()
    m.feed(got, 1)
    assert m.retractions == 15  # one every 4 s, "more than one a minute"
    usage = [r.token_usage for r in decodes(got)]
    assert sum(u >= 0.95 for u in usage) / len(usage) > 0.8
    assert all(r.queued and r.queued > 0 for r in decodes(got))


def test_queueing_is_a_queue_with_room_left_and_healthy_has_neither():
    q = decodes(lines("queueing", 400))
    assert all(r.queued and r.queued > 0 and r.token_usage < 0.9 for r in q)
    h = decodes(lines("healthy", 400))
    assert all(r.queued == 0 and r.token_usage < 0.9 for r in h)
    m = LogMetrics()
    m.feed(lines("healthy", int(120 * RATE)), 1)
    assert m.retractions == 0


def test_eager_says_so_in_its_args_and_its_lines():
    start = [text for _, text in startup_lines(cuda_graph=False, custom_all_reduce=False)]
    assert "'disable_cuda_graph': True" in start[0]
    assert "'disable_custom_all_reduce': True" in start[0]
    assert not any("CUDA graph" in text for text in start)
    assert all("cuda graph: False" in ln for ln in lines("launch-bound", 50)
               if "Decode batch" in ln)


def test_the_decode_rate_follows_the_gap_and_the_backend():
    sc = SCENARIOS["kernel-below-roofline"]
    slow = [r.gen_tps / r.running for r in decodes(lines("kernel-below-roofline", 200))]
    assert abs(sum(slow) / len(slow) - sc.request_tps()) / sc.request_tps() < 0.02
    assert sc.gap("flashinfer_cutedsl") < 1.3 < sc.gap()


def test_the_simulated_gpus_through_the_cockpits_nvml_readers():
    """What the demo's sampler and GPM counters read with the simulated NVML in
    place of pynvml: the server's readings of gpu-throttle."""
    port = free_port()
    sc = SCENARIOS["gpu-throttle"]
    SimulatedSglangMetrics("m", tp=8, seed=1).serve(port, scenario=sc)
    url = f"http://127.0.0.1:{port}/simulated/gpus"
    with installed(url, 8):
        sample = LocalSampler("localhost").sample()
        gpm = NvmlGpm()
        gpm.read()
        counters = gpm.read()
    assert len(sample.gpus) == 8 and sample.gpus[0].name == GPU_NAME
    g = sample.gpus[3]
    assert abs((g.util_pct or 0) - sc.util_pct()) <= 2
    assert set(g.throttle) == {"sw_power_cap", "sw_thermal_slowdown"}
    assert g.sm_clock_mhz and g.sm_clock_max_mhz
    assert abs(g.sm_clock_mhz / g.sm_clock_max_mhz - sc.clock_ratio) < 0.01
    assert g.bandwidth_gbs == PEAK_GBS
    assert counters[0].peak_gbs == PEAK_GBS
    assert abs((counters[0].dram_busy_pct or 0) - sc.dram_busy_pct()) < 3
    import sys

    assert not isinstance(sys.modules.get("pynvml"), SimulatedNvml)  # put back


def test_before_the_server_answers_the_simulated_gpus_idle():
    nv = SimulatedNvml(f"http://127.0.0.1:{free_port()}/simulated/gpus", 2)
    h = nv.nvmlDeviceGetHandleByIndex(1)
    assert nv.nvmlDeviceGetUtilizationRates(h).gpu == 0
    assert throttle_names(nv.nvmlDeviceGetCurrentClocksEventReasons(h)) == ["gpu_idle"]
    doc = gpu_readings(SCENARIOS["healthy"], "flashinfer_cutlass", 2, random.Random(1))
    assert doc["simulated"] and [g["throttle"] for g in doc["gpus"]] == [0, 0]
