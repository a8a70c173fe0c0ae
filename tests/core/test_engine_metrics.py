"""Engine /metrics: parsing (prometheus_client's parser) and the window figures.

The fixtures in tests/fixtures/metrics/ are what each engine version serves
(generated with prometheus_client from the names, labels and buckets of the
engines' sources: see generate.py there). Between scrape -a and -b, 10 s
apart, the traffic was chosen so that every quantile below can be worked out
by hand with Prometheus' histogram_quantile rule: find the first bucket whose
cumulative count reaches q * total, interpolate linearly inside it.
"""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from perftriage.core.model.engine_window import (
    derive,
    histogram_increase,
    increase,
    measured_ms_per_token,
    quantile,
)
from perftriage.core.parse.engine_metrics import MetricsFormatError, parse_exposition
from tests.support.helpers import FIXTURES

METRICS = FIXTURES / "metrics"


def snap(name: str):
    return parse_exposition((METRICS / f"{name}.prom").read_text())


def window(base: str):
    return derive([(0.0, snap(f"{base}-a")), (10.0, snap(f"{base}-b"))])


def close(value, expected):
    return value == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_sglang_05_by_hand():
    f = window("sglang-0.5")
    assert f.engine == "sglang"
    # both TP ranks report the same batch: counted once, not twice
    assert (f.running, f.queued, f.token_usage) == (32.0, 5.0, 0.5)
    # 5000 generated and 20000 prompt tokens in 10 s
    assert close(f.gen_tps, 500.0) and close(f.prompt_tps, 2000.0)
    # ITL increase: 50 x 9 ms (le 0.010), 40 x 12 ms (le 0.015), 10 x 50 ms (le 0.060)
    # p50: rank 50 -> bucket (0.008, 0.010] holding 50 -> 0.008 + 0.002 * 50/50 = 0.010
    # p90: rank 90 -> bucket (0.010, 0.015] holding 40 after 50 -> 0.010 + 0.005 * 40/40
    # p99: rank 99 -> bucket (0.040, 0.060] holding 10 after 90 -> 0.040 + 0.020 * 9/10
    assert close(f.itl_s.p50, 0.010) and close(f.itl_s.p90, 0.015) and close(f.itl_s.p99, 0.058)
    # TTFT increase: 5 x 0.15 (le 0.2), 4 x 0.5 (le 0.6), 1 x 1.5 (le 2)
    # p50: rank 5 in (0.1, 0.2] -> 0.2; p90: rank 9 in (0.4, 0.6] -> 0.6;
    # p99: rank 9.9 in (1, 2] holding 1 after 9 -> 1 + 1 * 0.9 = 1.9
    assert close(f.ttft_s.p50, 0.2) and close(f.ttft_s.p90, 0.6) and close(f.ttft_s.p99, 1.9)
    # e2e: 10 x 3.0 s all in (2, 4]: 2 + 2 * q
    assert close(f.e2e_s.p50, 3.0) and close(f.e2e_s.p90, 3.8) and close(f.e2e_s.p99, 3.98)
    # 5000 cached of 20000 prompt tokens in the window (the counters beat the gauge's 0.3)
    assert close(f.cache_hit_rate, 0.25)
    assert f.spec_accept_length == 3.1
    assert f.metrics_seen > 10


def test_sglang_05_keeps_the_ranks():
    ranks = snap("sglang-0.5-b").ranks
    assert [r.labels for r in ranks] == [{"tp_rank": "0", "pp_rank": "0"},
                                         {"tp_rank": "1", "pp_rank": "0"}]
    assert all(r.running == 32.0 and r.queued == 5.0 for r in ranks)


def test_sglang_04_old_names():
    f = window("sglang-0.4")
    assert f.engine == "sglang"
    # time_per_output_token_seconds, old buckets: 50 x 9 ms (le .01), 40 x 12 ms (le .015),
    # 10 x 45 ms (le .05): p99 = 0.04 + 0.01 * 9/10 = 0.049
    assert close(f.itl_s.p50, 0.010) and close(f.itl_s.p90, 0.015) and close(f.itl_s.p99, 0.049)
    assert f.cache_hit_rate == 0.3  # no cached_tokens counter yet: the gauge
    assert f.spec_accept_length is None
    assert close(f.gen_tps, 500.0)


# vLLM: 60 x 20 ms (le .025), 30 x 60 ms (le .075), 10 x 250 ms (le .3)
# p50: rank 50 in (0.01, 0.025] holding 60 -> 0.01 + 0.015 * 50/60 = 0.0225
# p90: rank 90 in (0.05, 0.075] holding 30 after 60 -> 0.075
# p99: rank 99 in (0.2, 0.3] holding 10 after 90 -> 0.2 + 0.1 * 9/10 = 0.29
@pytest.mark.parametrize("base", ["vllm-v0", "vllm-0.10", "vllm-0.11"])
def test_vllm_versions_by_hand(base):
    f = window(base)
    assert f.engine == "vllm"
    assert close(f.itl_s.p50, 0.0225) and close(f.itl_s.p90, 0.075) and close(f.itl_s.p99, 0.29)
    assert close(f.gen_tps, 300.0) and close(f.prompt_tps, 900.0)
    assert close(f.token_usage, 0.4)


def test_vllm_010_two_engines_add_up():
    f = window("vllm-0.10")
    assert (f.running, f.queued) == (16.0, 3.0)  # engine 0: 10 + 1, engine 1: 6 + 2
    assert close(f.cache_hit_rate, 800 / 2000)  # prefix_cache_hits / queries over the window
    assert [r.labels for r in snap("vllm-0.10-b").ranks] == [{"engine": "0"}, {"engine": "1"}]


def test_vllm_011_spec_accept_length():
    # 150 accepted tokens over 100 drafts: 1 + 1.5 (vLLM counts the bonus token)
    assert close(window("vllm-0.11").spec_accept_length, 2.5)
    assert window("vllm-v0").spec_accept_length is None


def test_new_names_win_over_deprecated_ones():
    text = """# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{engine="0",model_name="m"} 0.9
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.2
# TYPE vllm:time_per_output_token_seconds histogram
vllm:time_per_output_token_seconds_bucket{engine="0",le="0.5",model_name="m"} 0.0
vllm:time_per_output_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:time_per_output_token_seconds_sum{engine="0",model_name="m"} 4.0
vllm:time_per_output_token_seconds_count{engine="0",model_name="m"} 4.0
# TYPE vllm:inter_token_latency_seconds histogram
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.5",model_name="m"} 4.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:inter_token_latency_seconds_sum{engine="0",model_name="m"} 0.4
vllm:inter_token_latency_seconds_count{engine="0",model_name="m"} 4.0
"""
    s = parse_exposition(text)
    assert s.gauges["token_usage"] == 0.2
    assert s.histograms["itl"].sum == 0.4


def test_restart_gives_no_negative_rate():
    a, b, c = snap("vllm-0.11-a"), snap("vllm-0.11-b"), snap("vllm-0.11-c")
    # b -> c: the server restarted, generation_tokens fell from 3020 to 100
    across = derive([(10.0, b), (20.0, c)])
    assert close(across.gen_tps, 100 / 10)
    # whole window: 3000 before the restart and 100 after it, over 20 s
    whole = derive([(0.0, a), (10.0, b), (20.0, c)])
    assert close(whole.gen_tps, 3100 / 20)
    assert whole.prompt_tps > 0
    # ITL after the restart counts what the new server saw (10 x 20 ms), nothing negative
    itl = histogram_increase([b.histograms["itl"], c.histograms["itl"]])
    assert itl.count == 10 and min(itl.buckets) >= 0


def test_counter_increase_across_resets():
    assert increase([10, 20, 5, 7]) == 10 + 5 + 2
    assert increase([3]) == 0


def test_quantile_edges():
    bounds, cum = [0.1, 1.0], [0, 0, 5]  # everything above the last finite bound
    assert quantile(0.5, bounds, cum) == 1.0  # +Inf bucket: the largest finite bound
    assert quantile(0.5, bounds, [0, 0, 0]) is None  # no observations
    assert quantile(0.5, [0.1, 1.0], [4, 4, 4]) == pytest.approx(0.05)  # first bucket from 0


def test_single_scrape_has_gauges_but_no_rates():
    f = derive([(0.0, snap("sglang-0.5-b"))])
    assert f.running == 32.0 and f.gen_tps is None and f.itl_s.p50 is None


def test_measured_ms_per_token_is_the_mean_itl():
    w = [(0.0, snap("sglang-0.5-a")), (10.0, snap("sglang-0.5-b"))]
    # (50 x 9 + 40 x 12 + 10 x 50) ms / 100 = 14.3 ms
    assert measured_ms_per_token(w) == pytest.approx(14.3)


def test_unknown_metrics_are_ignored_and_missing_ones_are_none():
    f = derive([(0.0, parse_exposition("process_cpu_seconds_total 3.5\nfoo{a=\"b\"} 1\n"))])
    assert f.engine is None and f.running is None and f.itl_s.p99 is None
    assert f.metrics_seen == 2


@pytest.mark.parametrize("text", ["sglang:num_running_reqs{ 3\n", "<html>oops</html>\n",
                                  'x{le="a"} b\n'])
def test_malformed_text_is_one_clear_error(text):
    with pytest.raises(MetricsFormatError) as err:
        parse_exposition(text)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("name", sorted(p.stem for p in METRICS.glob("*.prom")))
def test_selecting_lines_before_parsing_changes_nothing(name, monkeypatch):
    from perftriage.core.parse import engine_metrics

    text = (METRICS / f"{name}.prom").read_text()
    fast = parse_exposition(text)
    monkeypatch.setattr(engine_metrics, "_select", lambda t: (t, 0))  # the whole page
    whole = parse_exposition(text)
    assert fast.gauges == whole.gauges and fast.counters == whole.counters
    assert fast.histograms == whole.histograms and fast.ranks == whole.ranks
    # the cheap count of families is the parser's
    families = {f.name for f in text_string_to_metric_families(text)
                if not f.name.endswith("_created")}
    assert fast.metrics_seen == len(families)
