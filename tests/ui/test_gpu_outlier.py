"""The Gap view and the gap's note name the GPU that deviates (by median absolute
deviation), not the busiest one with ties broken by index."""

from __future__ import annotations

from perftriage.core.analysis import counters as cnt
from perftriage.core.analysis import gap
from perftriage.core.analysis.gpu_outlier import deviating_gpu
from perftriage.ui.widgets.gap_view import gap_lines


def _gap(busy: list[float]) -> gap.GapResult:
    counters = [cnt.make_counters(i, peak_gbs=8000, dram_busy_pct=p) for i, p in enumerate(busy)]
    return gap.compute(bytes_gb=10.0, counters=counters, peak_gbs=8000, tokens_per_s=50)


def test_seven_alike_and_one_low_names_the_low_one():
    r = _gap([56, 56, 31, 56, 56, 56, 56, 56])
    assert (r.slowest_gpu, r.outlier_side) == (2, "low")
    assert "GPU 2 deviates: DRAM 31 % busy, 25 points below the median 56 % of 8 GPUs" in r.note
    assert "GPU 0" not in r.note
    marked = [line for line in gap_lines(r, "b200") if "◀" in line]
    assert len(marked) == 1 and "GPU2" in marked[0] and "outlier (low)" in marked[0]


def test_one_high_among_noisy_alike_is_named_high():
    r = _gap([40.5, 41.0, 39.8, 40.2, 71.0, 40.9, 39.5, 40.1])
    assert (r.slowest_gpu, r.outlier_side) == (4, "high")
    assert "GPU 4 deviates: DRAM 71 % busy, 31 points above the median" in r.note


def test_uniform_noise_and_two_gpus_name_nobody():
    assert _gap([55, 57, 52, 58, 56, 54, 53, 57]).slowest_gpu is None
    two = _gap([56, 31])
    assert two.slowest_gpu is None  # with two, neither is the odd one
    assert "the GPUs disagree: DRAM 56 % busy on GPU 0, 31 % on GPU 1" in two.note


def test_a_split_fleet_or_a_tie_names_nobody():
    assert deviating_gpu({0: 56, 1: 56, 2: 31, 3: 31}, 15) is None  # half and half
    assert deviating_gpu({0: 50, 1: 50, 2: 50, 3: 10, 4: 90}, 15) is None  # equally far both ways
    assert deviating_gpu({0: 50, 1: 51, 2: 49, 3: 10}, 15).index == 3
