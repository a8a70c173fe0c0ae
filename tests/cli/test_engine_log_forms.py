"""Every log form SGLang 0.5.23 and vLLM 0.33.0 write, as the engines format it.

Each fixture line is composed from the engine's own format string (cited as
file:line in that release's wheel, `pip download --no-deps sglang==0.5.23
vllm==0.33.0`) with made-up values, so a parser that reads them reads what
the current releases print.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.parse import batch_scan as bs
from perftriage.core.parse import logparse as lp
from perftriage.core.parse.log_metrics import LogMetrics

SG_TS = "[2026-12-01 10:00:00 TP0]"
# sglang/srt/managers/scheduler_components/metrics_reporter.py:963 (0.5.23)
#   f"Decode batch{iter_msg}, #running-req: {num_running_reqs}, {token_usage_msg}"
# with pool_stats_observer.py:146-148 "#token: {n}, token usage: {u:.2f}" and
# metrics_reporter.py:1039-1042 "{graph}: {b}, gen throughput (token/s): {g:.2f}, #queue-req: {q}"
DECODE_PLAIN = ("Decode batch, #running-req: 64, #token: 52000, token usage: 0.41, "
                "cuda graph: True, gen throughput (token/s): 3012.55, #queue-req: 3")


def one(line: str) -> lp.Metric:
    rec = lp.parse_line(line)
    assert isinstance(rec, lp.Metric), line
    return rec


def test_plain_decode_stays_on_the_fast_path() -> None:
    # the common shape must be read by the flood scan's fast regex, not the general parser
    tri = bs.triage([f"{SG_TS} {DECODE_PLAIN}", f"[2026-12-01 10:00:00 TP3 EP3] {DECODE_PLAIN}"])
    assert tri.fast == [0, 1] and tri.other == []
    assert tri.gen == [3012.55, 3012.55]


@pytest.mark.parametrize("prefix, dp", [
    # utils/common.py:2630 "[%(asctime)s{maybe_ms}{prefix}] %(message)s"; the prefix
    # is " DP{d} TP{t} EP{e} PP{p}" for the parallelisms > 1
    ("[2026-12-01 10:00:00 DP3 TP3 EP3]", 3),
    ("[2026-12-01 10:00:00 DP1 TP0 PP1]", 1),
    # debug_utils/log_parser.py:2 the Ray actor prefix "(\w+ pid=N(, ip=A)?)"
    ("(SchedulerDisaggregationDecodeMixin pid=4242) [2026-12-01 10:00:00 DP2 TP2]", 2),
    ("(SchedulerDisaggregationDecodeMixin pid=4242, ip=10.1.2.3) [2026-12-01 10:00:00 TP0]",
     None),
])
def test_sglang_rank_tags_and_ray_prefix(prefix: str, dp: int | None) -> None:
    m = one(f"{prefix} {DECODE_PLAIN}")
    assert (m.kind, m.gen_tps, m.running, m.queued, m.token_usage) == (
        "decode", 3012.55, 64, 3, 0.41)
    assert m.engine_index == dp
    if dp is not None:  # several engines: the general parser, which keeps the rank
        assert bs.triage([f"{prefix} {DECODE_PLAIN}"]).other == [0]


def test_sglang_iteration_tag() -> None:
    # metrics_reporter.py:962 iter_msg = f" [{batch_iter}]" if LOG_FORWARD_ITERS
    m = one(f"{SG_TS} " + DECODE_PLAIN.replace("Decode batch,", "Decode batch [1234],"))
    assert (m.kind, m.gen_tps, m.running) == ("decode", 3012.55, 64)
    p = one(f"{SG_TS} Prefill batch [77], #new-seq: 2, #new-token: 900, #cached-token: 100, "
            "token usage: 0.10, #running-req: 4, #queue-req: 0, #pending-token: 0, "
            "cuda graph: False, input throughput (token/s): 4500.00")
    assert (p.kind, p.input_tps, p.new_tokens, p.cached_tokens) == ("prefill", 4500.0, 900, 100)


@pytest.mark.parametrize("usage, expected", [
    # pool_stats_observer.py:122-126 hybrid SWA
    ("#full token: 5000, full token usage: 0.30, #swa token: 800, swa token usage: 0.55", 0.55),
    # pool_stats_observer.py:130-137 hybrid SSM (mamba)
    ("#full token: 5000, full token usage: 0.30, mamba num: 12, mamba usage: 0.20", 0.30),
    # pool_stats_observer.py:139-144 hisparse (device side is the pool)
    ("#gpu token: 4000, gpu token usage: 0.25, #cpu token: 90000, cpu token usage: 0.70", 0.25),
])
def test_sglang_hybrid_pools(usage: str, expected: float) -> None:
    # the scheduler's limit is the fullest pool (pool_stats_observer.py:95-102 get_max_pool_usage)
    m = one(f"{SG_TS} Decode batch, #running-req: 8, {usage}, cuda graph: True, "
            "gen throughput (token/s): 700.00, #queue-req: 0")
    assert (m.gen_tps, m.token_usage) == (700.0, expected)


def test_sglang_speculative_decode() -> None:
    # metrics_reporter.py:1005 "accept len: {:.2f}, accept rate: {:.2f}, ", 1007 "cap len"
    m = one(f"{SG_TS} Decode batch, #running-req: 1, #token: 900, token usage: 0.01, "
            "accept len: 2.86, accept rate: 0.62, cap len: 3.00, cuda graph: True, "
            "gen throughput (token/s): 286.00, #queue-req: 0")
    assert (m.gen_tps, m.spec_accept_len) == (286.0, 2.86)
    # gen tok/s counts accepted tokens; the GPU's time per step is accept_len tokens' worth
    ms, label = lp.token_latency(m.gen_tps, m.running, m.spec_accept_len)
    assert label == "ms/step@bs1" and ms == pytest.approx(10.0)
    assert lp.token_latency(m.gen_tps, m.running) == (pytest.approx(1000 / 286), "ms/tok@bs1")


def test_sglang_disaggregation_decode() -> None:
    # metrics_reporter.py:1024-1029 (DisaggregationMode.DECODE)
    m = one("(SchedulerDisaggregationDecodeMixin pid=4242) [2026-12-01 10:00:00 DP0 TP0 EP0] "
            "Decode batch, #running-req: 30, #token: 9000, token usage: 0.20, "
            "pre-allocated usage: 0.05, #prealloc-req: 2, #transfer-req: 1, "
            "#retracted-req: 0, cuda graph: True, gen throughput (token/s): 1500.00, "
            "#queue-req: 4")
    assert (m.gen_tps, m.running, m.queued, m.token_usage, m.engine_index) == (
        1500.0, 30, 4, 0.2, 0)


@pytest.mark.parametrize("label", ["cpu graph", "npu graph", "musa graph"])
def test_sglang_other_graph_labels(label: str) -> None:
    # metrics_reporter.py:286-290 _graph_backend_label by device
    m = one(f"{SG_TS} " + DECODE_PLAIN.replace("cuda graph", label))
    assert (m.gen_tps, m.queued) == (3012.55, 3)


def test_sglang_mfu_metrics() -> None:
    # metrics_reporter.py:1052-1056 (--enable-mfu-metrics)
    m = one(f"{SG_TS} {DECODE_PLAIN}, est. decode TFLOPS/s (per GPU): 41.20, "
            "est. read BW (GB/s per GPU): 3105.70, est. write BW (GB/s per GPU): 12.40")
    assert (m.gen_tps, m.engine_read_gbs) == (3012.55, 3105.7)


def test_sglang_prefill_new_and_cached_tokens() -> None:
    # metrics_reporter.py:753-783: 0.5.23 has no "#token:" in the prefill line
    # (pool_stats_observer.py:104-117 get_prefill_usage_msg_parts)
    line = (f"{SG_TS} Prefill batch, #new-seq: 3, #new-token: 600, #cached-token: 1800, "
            "token usage: 0.12, #running-req: 5, #queue-req: 2, #pending-token: 0, "
            "cuda graph: False, input throughput (token/s): 9000.00")
    m = one(line)
    assert (m.new_tokens, m.cached_tokens, m.cache_hit_rate, m.input_tps) == (
        600, 1800, 0.75, 9000.0)
    tri = bs.triage([line])  # the common prefill shape is on the fast path too
    assert len(tri.prefill) == 1 and tri.other == []
    assert bs.finish([line], tri).records()[0][1] == m


VL_PREFIX = "(APIServer pid=4711) INFO 12-01 10:00:00 [loggers.py:335] "


def test_vllm_engine_line_with_every_optional_part() -> None:
    # vllm/v1/metrics/loggers.py:282-337 (0.33.0): the parts in their order, behind
    # log_prefix "Engine {:03d}: " (loggers.py:178); logger.py:28-33 the line prefix
    m = one(VL_PREFIX + "Engine 001: Avg prompt throughput: 1200.5 tokens/s, "
            "Avg generation throughput: 845.2 tokens/s, Running: 32 reqs, Waiting: 5 reqs, "
            "Deferred: 2 reqs, KV fetch: 1 waiting to start, 2 in progress, 0 completed waiting, "
            "Preemptions: 7, GPU KV cache usage: 63.5%, Prefix cache hit rate: 41.0%, "
            "External prefix cache hit rate: 12.0%")
    assert (m.kind, m.gen_tps, m.input_tps, m.running, m.queued) == (
        "stats", 845.2, 1200.5, 32, 5)
    assert (m.token_usage, m.cache_hit_rate, m.preemptions, m.engine_index) == (
        0.635, 0.41, 7, 1)


def test_vllm_other_kv_device() -> None:
    # loggers.py:117 kv_cache_device is "GPU" for cuda, else the device name upper-cased
    m = one(VL_PREFIX + "Engine 000: Avg prompt throughput: 0.0 tokens/s, "
            "Avg generation throughput: 10.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
            "XPU KV cache usage: 5.0%")
    assert m.token_usage == 0.05


def test_vllm_spec_decoding_and_mfu_lines() -> None:
    # vllm/v1/spec_decode/metrics.py:120-136 (no engine prefix)
    spec = one("(APIServer pid=4711) INFO 12-01 10:00:00 [metrics.py:120] SpecDecoding metrics: "
               "Mean acceptance length: 2.53, Accepted throughput: 95.20 tokens/s, "
               "Drafted throughput: 186.00 tokens/s, Accepted: 952 tokens, Drafted: 1860 tokens, "
               "Per-position acceptance rate: 0.810, 0.520, 0.200, "
               "Avg Draft acceptance rate: 51.2%")
    assert (spec.kind, spec.spec_accept_len, spec.gen_tps) == ("spec", 2.53, None)
    # vllm/v1/metrics/perf.py:1725-1730 "%sMFU: %.1f TF/s/device %.1f GB/s/device"
    mfu = one(VL_PREFIX + "Engine 000: MFU: 88.4 TF/s/device 2950.3 GB/s/device")
    assert (mfu.kind, mfu.engine_read_gbs, mfu.engine_index) == ("mfu", 2950.3, 0)
    lm = LogMetrics()
    stats = (VL_PREFIX + "Engine 000: Avg prompt throughput: 0.0 tokens/s, "
             "Avg generation throughput: 253.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
             "GPU KV cache usage: 1.0%")
    spec_line = ("(APIServer pid=4711) INFO 12-01 10:00:00 [metrics.py:120] SpecDecoding "
                 "metrics: Mean acceptance length: 2.53, Accepted throughput: 95.20 tokens/s")
    lm.feed([stats, spec_line, VL_PREFIX + "Engine 000: MFU: 88.4 TF/s/device 2950.3 GB/s/device"],
            1)
    # the side lines do not become decode samples; they set the latest values
    assert list(lm.gen_tps) == [253.0] and lm.last_decode is not None
    assert (lm.spec_accept_len, lm.engine_read_gbs) == (2.53, 2950.3)
    assert lm.token_latency[1] == "ms/step@bs1"
    assert lm.token_latency[0] == pytest.approx(1000 * 2.53 / 253.0)


def test_vllm_logging_prefix_and_json_format() -> None:
    # envs.py:864-865 VLLM_LOGGING_PREFIX goes first in logger.py:28-32's format
    m = one("[node-7] " + VL_PREFIX + "Engine 000: Avg prompt throughput: 1.0 tokens/s, "
            "Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
            "GPU KV cache usage: 3.0%")
    assert (m.ts, m.gen_tps) == ("12-01 10:00:00", 2.0)
    # logger.py:241-248 formatter "json": pythonjsonlogger with
    # logging_utils/formatter.py:7-9 "%(asctime)s %(levelname)s %(name)s %(processName)s
    # %(process)d %(message)s" (asctime in logging's default "%Y-%m-%d %H:%M:%S,mmm")
    line = json.dumps({"asctime": "2026-12-01 10:00:00,123", "levelname": "INFO",
                       "name": "vllm.v1.metrics.loggers", "processName": "MainProcess",
                       "process": 4711, "message": "Engine 002: Avg prompt throughput: 0.0 "
                       "tokens/s, Avg generation throughput: 99.5 tokens/s, Running: 4 reqs, "
                       "Waiting: 0 reqs, Preemptions: 1, GPU KV cache usage: 9.0%"})
    j = one(line)
    assert (j.engine, j.ts, j.gen_tps, j.engine_index, j.preemptions, j.token_usage) == (
        "vllm", "2026-12-01 10:00:00,123", 99.5, 2, 1, 0.09)
    assert lp.parse_line('{"message": broken') is None


def _engine_line(idx: int, gen: float, running: int) -> str:
    return (VL_PREFIX + f"Engine {idx:03d}: Avg prompt throughput: 0.0 tokens/s, "
            f"Avg generation throughput: {gen} tokens/s, Running: {running} reqs, "
            "Waiting: 0 reqs, GPU KV cache usage: 10.0%")


def test_data_parallel_rates_are_summed_not_averaged() -> None:
    lm = LogMetrics()
    lm.feed([_engine_line(0, 100.0, 4), _engine_line(1, 300.0, 12), _engine_line(0, 110.0, 4)],
            1)
    # each point is the total over the engines' latest lines
    assert list(lm.gen_tps) == [100.0, 400.0, 410.0]
    assert list(lm.running) == [4, 16, 16]
    assert lm.last_decode is not None and lm.last_decode.gen_tps == 410.0
    # SGLang DP ranks alike
    sg = LogMetrics()
    sg.feed([f"[2026-12-01 10:00:00 DP{d} TP{d}] {DECODE_PLAIN}" for d in (0, 1, 2, 3)], 1)
    assert sg.latest_gen_tps == pytest.approx(4 * 3012.55)
    assert sg.engine_count == 4 and lm.engine_count == 2
    from perftriage.ui.widgets.logs import metrics_line

    line = metrics_line(sg)
    assert "4 engines" in line.plain and "gen [b]12050.2[/b] tok/s" in line.markup


def test_metrics_json_carries_the_new_fields(tmp_path) -> None:
    log = tmp_path / "dp.log"
    log.write_text("\n".join([
        _engine_line(0, 100.0, 4), _engine_line(1, 300.0, 12),
        f"{SG_TS} {DECODE_PLAIN}, est. decode TFLOPS/s (per GPU): 1.00, "
        "est. read BW (GB/s per GPU): 2000.00, est. write BW (GB/s per GPU): 3.00",
    ]) + "\n")
    res = CliRunner().invoke(cli, ["metrics", str(log), "--json"])
    assert res.exit_code == 0, res.output
    recs = [json.loads(x) for x in res.output.splitlines()]
    # per engine in the records (the total is summed where one is shown)
    assert [(r["engine_index"], r["gen_tps"]) for r in recs[:2]] == [(0, 100.0), (1, 300.0)]
    assert recs[2]["engine_read_gbs"] == 2000.0


def test_simulator_writes_the_new_forms(tmp_path) -> None:
    from perftriage.simulator.sglang_sim import Steady

    sim = Steady(seed=3, error_every=0, spec_accept_len=2.5, mfu=True, dp=2)
    lines = [sim.line() for _ in range(40)]
    recs = [r for r in map(lp.parse_line, lines) if isinstance(r, lp.Metric)]
    decode = [r for r in recs if r.kind == "decode"]
    prefill = [r for r in recs if r.kind == "prefill"]
    assert decode and prefill
    assert {r.engine_index for r in decode} == {0, 1}
    assert all(r.spec_accept_len == 2.5 and r.engine_read_gbs for r in decode)
    assert all(r.new_tokens is not None and r.cached_tokens == 0 for r in prefill)
    # the plain simulator's lines stay on the flood scan's fast path
    plain = Steady(seed=3, error_every=0)
    tri = bs.triage([plain.line() for _ in range(40)])
    assert tri.other == [] and len(tri.fast) + len(tri.prefill) == 40
