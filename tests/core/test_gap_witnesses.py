"""The three witnesses of memory traffic (achieved, useful, the engine's own
estimate) and the verdict when two of them disagree by more than 1.5x."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from perftriage.core.analysis import gap as gap_math
from perftriage.core.analysis.witnesses import disagreement


def counters(bw: float, busy: float) -> list:
    return [SimpleNamespace(index=0, name="H200", dram_busy_pct=busy, dram_bw_gbs=bw,
                            sm_active_pct=90.0, nvlink_rx_gbs=None, nvlink_tx_gbs=None)]


@pytest.mark.parametrize("achieved, useful, engine, pair, words", [
    (3000.0, 2900.0, 3100.0, None, None),  # all agree
    (3000.0, 3000.0, None, None, None),  # no estimate: the gap verdict's business alone
    (4000.0, 2000.0, 2100.0, "achieved/useful+engine", "another process shares the GPU"),
    (3000.0, 1000.0, 3000.0, "useful/engine", "the inputs are wrong"),
    (3000.0, 3000.0, 1500.0, "engine/achieved+useful", "misses traffic"),
    (3000.0, 3000.0, 6000.0, "engine/achieved+useful", "counts bytes that are not read"),
    (4000.0, None, 2000.0, "achieved/engine", "misses dtype conversions"),
    (1000.0, None, 2000.0, "achieved/engine", "over-counts"),
])
def test_which_pair_disagrees(achieved, useful, engine, pair, words):
    d = disagreement(achieved, useful, engine)
    if pair is None:
        assert d is None
    else:
        assert d is not None and d.pair == pair and words in d.words and d.ratio > 1.5


def test_gap_carries_the_engine_witness():
    r = gap_math.compute(bytes_gb=40.0, counters=counters(4300.0, 90.0), peak_gbs=4800.0,
                         tokens_per_s=100.0, batch=1, engine_read_gbs=2000.0)
    assert r.public()["engine_read_gbs"] == 2000.0
    # achieved 4300 against useful 4000 and the engine's 2000: only the engine is off
    assert r.disagreement == "engine/achieved+useful"
    assert "witnesses disagree (engine/achieved+useful 2.0x)" in r.note


def test_speculative_decoding_counts_steps():
    # 300 tok/s at batch 1 with 3 tokens a step: 100 steps/s, 10 ms a step
    r = gap_math.compute(bytes_gb=40.0, counters=counters(4000.0, 85.0), peak_gbs=4800.0,
                         tokens_per_s=300.0, batch=1, accept_len=3.0)
    assert r.measured_ms == 10.0 and r.ms_label == "ms/step@bs1"
    assert r.useful_bw_gbs == 4000.0  # bytes per step x steps/s, not x tokens/s
