"""/metrics as SGLang 0.5.23 and vLLM 0.33.0 serve it, old names still read.

The pages are generated with prometheus_client from the names, types and
label names in the engines' sources (cited per series; `pip download
--no-deps sglang==0.5.23 vllm==0.33.0`), values made up.
"""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from perftriage.core.model.engine_window import derive
from perftriage.core.parse.engine_metrics import parse_exposition
from perftriage.simulator.sglang_metrics import SimulatedSglangMetrics

# vllm/v1/metrics/loggers.py:499 labelnames = ["model_name", "engine"]
VLLM_LABELS = ["model_name", "engine"]


def vllm_page(t: float) -> str:
    """Two data-parallel engines at time ``t`` seconds (counters grow with t)."""
    reg = CollectorRegistry()
    running = Gauge("vllm:num_requests_running", "", VLLM_LABELS, registry=reg)  # loggers.py:528
    usage = Gauge("vllm:kv_cache_usage_perc", "", VLLM_LABELS, registry=reg)  # loggers.py:620
    preempt = Counter("vllm:num_preemptions", "", VLLM_LABELS, registry=reg)  # loggers.py:739
    gen = Counter("vllm:generation_tokens", "", VLLM_LABELS, registry=reg)  # loggers.py:799
    prompt = Counter("vllm:prompt_tokens", "", VLLM_LABELS, registry=reg)  # loggers.py:748
    cached = Counter("vllm:prompt_tokens_cached", "", VLLM_LABELS, registry=reg)  # loggers.py:773
    # vllm/v1/metrics/perf.py:1776 (a Counter per GPU)
    read = Counter("vllm:estimated_read_bytes_per_gpu", "", VLLM_LABELS, registry=reg)
    # vllm/v1/spec_decode/metrics.py:229-231
    drafts = Counter("vllm:spec_decode_num_drafts", "", VLLM_LABELS, registry=reg)
    accepted = Counter("vllm:spec_decode_num_accepted_tokens", "", VLLM_LABELS, registry=reg)
    for engine, share in (("0", 1.0), ("1", 3.0)):
        lb = ("m", engine)
        running.labels(*lb).set(8 * share)
        usage.labels(*lb).set(0.1 * share)
        preempt.labels(*lb).inc(t * share)
        gen.labels(*lb).inc(100 * t * share)
        prompt.labels(*lb).inc(1000 * t)
        cached.labels(*lb).inc(250 * t)
        # 2000 GB/s on engine 0's GPU, 3000 GB/s on engine 1's: 2500 per GPU on average
        read.labels(*lb).inc((1500e9 + 500e9 * share) * t)
        drafts.labels(*lb).inc(10 * t)
        accepted.labels(*lb).inc(15 * t)
    return generate_latest(reg).decode()


def test_vllm_033_page() -> None:
    f = derive([(0.0, parse_exposition(vllm_page(1.0))), (10.0, parse_exposition(vllm_page(11.0)))])
    assert f.engine == "vllm"
    assert f.running == 32.0  # engines summed: 8 + 24
    assert f.gen_tps == pytest.approx(400.0)  # (100 + 300) tok/s, summed
    assert f.preemptions == pytest.approx(40.0)  # 10 s x (1 + 3)
    assert f.cache_hit_rate == pytest.approx(0.25)  # prompt_tokens_cached / prompt_tokens
    assert f.spec_accept_length == pytest.approx(2.5)  # 1 + 15/10 (bonus token counted)
    # per-GPU counters are averaged over the engines' GPUs, not added
    assert f.engine_read_gbs == pytest.approx(2500.0)
    assert f.token_usage == pytest.approx(0.2)  # a fraction: averaged


def test_old_vllm_names_still_read() -> None:
    text = """# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.4
# TYPE vllm:gpu_prefix_cache_hits_total counter
vllm:gpu_prefix_cache_hits_total{engine="0",model_name="m"} 5.0
# TYPE vllm:gpu_prefix_cache_queries_total counter
vllm:gpu_prefix_cache_queries_total{engine="0",model_name="m"} 10.0
"""
    s = parse_exposition(text)
    assert s.gauges["token_usage"] == 0.4
    assert (s.counters["prefix_cache_hits"], s.counters["prefix_cache_queries"]) == (5.0, 10.0)


def test_sglang_simulator_serves_the_engine_read_estimate() -> None:
    # sglang/srt/observability/metrics_collector.py:1100 (0.5.23), --enable-mfu-metrics
    sim = SimulatedSglangMetrics("m", tp=2, seed=1)
    # like SGLang, the series exist from the first estimate on (no pre-created labels)
    assert "read_bytes" not in parse_exposition(generate_latest(sim.registry).decode()).counters
    sim.decode(32, 0, 0.1, 800.0, 1.0, read_gbs=3000.0)
    a = parse_exposition(generate_latest(sim.registry).decode())
    sim.decode(32, 0, 0.1, 800.0, 10.0, read_gbs=3000.0, spec_accept_len=2.2)
    b = parse_exposition(generate_latest(sim.registry).decode())
    f = derive([(0.0, a), (10.0, b)])
    # every TP rank's counter says the same (rank series are one scheduler: not added)
    assert f.engine_read_gbs == pytest.approx(3000.0)
    assert f.spec_accept_length == pytest.approx(2.2)


def test_engine_view_shows_the_engine_read_estimate() -> None:
    from perftriage.core.model.engine_state import EngineState, add_sample
    from perftriage.core.view.engine_view import strip_text

    es = EngineState("engine:n1", "n1", conn_state="up")
    add_sample(es, 0.0, parse_exposition(vllm_page(1.0)))
    add_sample(es, 10.0, parse_exposition(vllm_page(11.0)))
    text = strip_text(es).plain
    assert "est. read 2500 GB/s/GPU" in text and "preempted 40" in text
