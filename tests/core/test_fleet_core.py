"""Fleet core: robust outliers (median/MAD), node-set folding, reading the
Prometheus API's JSON, and the summary `perftriage fleet --json` prints."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, strategies as st

from perftriage.core.fleet import nodeset, promql
from perftriage.core.fleet.model import FleetSample, FleetSnapshot
from perftriage.core.analysis.outliers import outlier_indexes, robust_stats


def test_median_and_mad_and_distance():
    s = robust_stats([0.55, 0.56, 0.57, 0.56, 0.31])
    assert s.median == 0.56
    assert s.mad == pytest.approx(0.01)
    assert s.distance(0.31) == pytest.approx(25.0)
    assert outlier_indexes([0.55, 0.56, 0.57, 0.56, 0.31], s) == [(4, pytest.approx(25.0))]


def test_one_hung_gpu_does_not_hide_itself():
    values = [95.0] * 6 + [96.0, 94.0, 0.0]  # the mean/stddev would call 0 % ~2.7 sigma
    found = outlier_indexes(values, robust_stats(values))
    assert [i for i, _ in found] == [8]


def test_mad_zero_falls_back_to_mean_absolute_deviation():
    values = [0.0] * 7 + [80.0]  # 7 idle GPUs and one busy: MAD is 0
    s = robust_stats(values)
    assert s.mad == 0.0 and s.scale == pytest.approx(10.0)
    assert s.distance(80.0) == pytest.approx(8.0)
    assert [i for i, _ in outlier_indexes(values, s)] == [7]


def test_all_identical_has_no_outliers_and_zero_distance():
    s = robust_stats([5.0] * 10)
    assert (s.mad, s.scale, s.distance(5.0), s.distance(7.0)) == (0.0, 0.0, 0.0, 0.0)
    assert outlier_indexes([5.0] * 10, s) == []


def test_non_finite_values_are_dropped_and_tiny_fleets_have_no_outliers():
    s = robust_stats([1.0, float("nan"), 2.0, float("inf")])
    assert s.count == 2 and s.median == 1.5
    assert outlier_indexes([1.0, 100.0], robust_stats([1.0, 100.0])) == []
    assert robust_stats([float("nan")]) is None


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), max_size=50))
def test_distances_are_always_finite(values):
    s = robust_stats(values)
    if s is None:
        return
    for v in values:
        if math.isfinite(v):
            assert math.isfinite(s.distance(v))
    for _, d in outlier_indexes(values, s):
        assert math.isfinite(d)


def test_nodeset_folds_with_clustershell():
    assert nodeset.fold([f"node{i:03d}" for i in range(1, 65)]) == "node[001-064]"
    assert nodeset.fold(["node02", "node01", "node10", "gpu-a1", "node01"]) == "gpu-a1,node[01-02,10]"
    assert nodeset.expand("node[01-03]") == ["node01", "node02", "node03"]


def test_nodeset_keeps_names_clustershell_would_misread():
    # '@' is a group, ',' '!' '&' '^' operators and '[' a range to ClusterShell
    assert nodeset.fold(["n1", "n2", "root@10.0.0.1:22", "a&b"]) == "n[1-2],root@10.0.0.1:22,a&b"


def _answer(result, result_type="vector") -> bytes:
    return json.dumps({"status": "success",
                       "data": {"resultType": result_type, "result": result}}).encode()


def _series(name, value, **labels):
    return {"metric": {"__name__": name, **labels}, "value": [1700000000.0, str(value)]}


def test_gpu_samples_use_hostname_and_gpu_labels():
    body = _answer([
        _series("DCGM_FI_PROF_DRAM_ACTIVE", 0.56, Hostname="node001", gpu="0", instance="x:9400"),
        _series("DCGM_FI_PROF_DRAM_ACTIVE", "NaN", Hostname="node001", gpu="1"),
        _series("DCGM_FI_PROF_DRAM_ACTIVE", 0.5, gpu="2", instance="node002:9400"),
        _series("DCGM_FI_PROF_DRAM_ACTIVE", 0.5, Hostname="node003"),  # no gpu label
    ])
    got = promql.gpu_samples(promql.decode_gpu(body))
    assert got == [FleetSample("node001", 0, "DCGM_FI_PROF_DRAM_ACTIVE", 0.56),
                   FleetSample("node002", 2, "DCGM_FI_PROF_DRAM_ACTIVE", 0.5)]


def test_engine_samples_average_a_hosts_series_and_escape_hostile_labels():
    body = _answer([
        _series("sglang:token_usage", 0.4, instance="node001:30000", tp_rank="0"),
        _series("sglang:token_usage", 0.6, instance="node001:30000", tp_rank="1"),
        _series("vllm:num_requests_running", 3, instance="evil\x1b[2J:8000"),
    ])
    got = sorted(promql.engine_samples(promql.decode(body)), key=lambda s: s.metric)
    assert got[0] == FleetSample("node001", None, "sglang:token_usage", 0.5)
    assert "\x1b" not in got[1].host and got[1].host.startswith("evil")


def test_decode_errors_are_one_line_api_errors():
    err = json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"}).encode()
    with pytest.raises(promql.ApiError, match="bad_data: parse error"):
        promql.decode(err)
    with pytest.raises(promql.ApiError, match="not a Prometheus API answer"):
        promql.decode(b"<html>proxy login</html>")
    with pytest.raises(promql.ApiError, match="vector or matrix"):
        promql.decode(_answer([1.0, "1"], "scalar"))


def test_range_points():
    body = _answer([{"metric": {}, "values": [[1.0, "0.5"], [2.0, "NaN"], [3.0, "0.7"]]}], "matrix")
    assert promql.range_points(promql.decode(body)) == [[(1.0, 0.5), (3.0, 0.7)]]


def test_summary_record_shape_and_order():
    samples = []
    for h in range(1, 9):
        for g in range(8):
            dram = 0.56 + 0.01 * ((h + g) % 3 - 1)
            if (h, g) == (3, 3):
                dram = 0.31
            samples.append(FleetSample(f"node{h:03d}", g, "DCGM_FI_PROF_DRAM_ACTIVE", dram))
            power = 600.0 + (h * 7 + g) % 5 - 2
            if (h, g) == (5, 1):
                power = 300.0
            samples.append(FleetSample(f"node{h:03d}", g, "DCGM_FI_DEV_POWER_USAGE", power))
        samples.append(FleetSample(f"node{h:03d}", None, "sglang:gen_throughput", 1000.0 + h))
    summary = FleetSnapshot(samples).summarize()
    rec = summary.record()
    assert list(rec) == ["hosts", "gpus", "medians", "outliers"]
    assert (rec["hosts"], rec["gpus"]) == (8, 64)
    assert rec["medians"]["DCGM_FI_PROF_DRAM_ACTIVE"] == pytest.approx(0.56)
    assert [(o["host"], o["gpu"], o["metric"]) for o in rec["outliers"]] == [
        ("node005", 1, "DCGM_FI_DEV_POWER_USAGE"),  # 300 W: 300 MADs away
        ("node003", 3, "DCGM_FI_PROF_DRAM_ACTIVE"),  # 0.31: 25 MADs away
    ]
    assert set(rec["outliers"][0]) == {"host", "gpu", "metric", "value", "fleet_median"}
    assert summary.outliers[1].sentence() == "node003 GPU3 DRAM active 0.31 vs fleet median 0.56"
    assert summary.metric_order()[:2] == ["DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_PROF_DRAM_ACTIVE"]
    json.dumps(rec, allow_nan=False)


def test_fleet_view_grid_sorts_hosts_by_what_deviates_and_folds_the_rest():
    from perftriage.core.view.fleet_view import folded_hosts, medians_text, metric_grid, outlier_texts

    samples = [FleetSample(f"node{h:03d}", g, "DCGM_FI_PROF_DRAM_ACTIVE",
                           0.31 if (h, g) == (117, 3) else 0.56 + 0.01 * ((h + g) % 3 - 1))
               for h in range(1, 129) for g in range(8)]
    samples += [FleetSample(f"node{h:03d}", None, "sglang:token_usage", 0.6) for h in range(1, 129)]
    snap = FleetSnapshot(samples)
    summary = snap.summarize()
    grid = metric_grid(snap, summary, "DCGM_FI_PROF_DRAM_ACTIVE")
    assert grid.columns == [f"GPU{g}" for g in range(8)]
    assert grid.rows[0].host == "node117" and grid.rows[0].values[3] == 0.31
    assert grid.rows[0].distances[3] == pytest.approx(25.0)
    assert metric_grid(snap, summary, "sglang:token_usage").columns == ["value"]
    assert folded_hosts(snap, summary) == ("node117", "node[001-116,118-128]", 1, 127)
    assert medians_text(summary).plain.startswith("DRAM active 0.56 (1!)")
    assert outlier_texts(summary)[0].plain == (
        "node117 GPU3 DRAM active 0.31 vs fleet median 0.56  25.0×MAD")
