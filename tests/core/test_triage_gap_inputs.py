"""A gap under 1x — the step measured faster than its memory-bandwidth floor —
says the gap's inputs are off (too many bytes a step, too few GPUs or too
little bandwidth), not that the server is at its floor. Seen on a real H200:
the gap form prefilled 20 GB on 1 GPU for a server that moved fewer bytes a
step; the gap read 0.69x and the Triage view went blank ("no finding": a
near-floor of 0 %) while the GPU was busy 98 %."""

from __future__ import annotations

from perftriage.core.triage.diagnose import diagnose
from perftriage.core.triage.witnesses import Witnesses


def busy(gap: float) -> list:
    return diagnose(Witnesses(host="gpu", start=0, end=30, gap=gap, gpu_util_pct=98.0,
                              decode_tps=17000.0, traffic_ratio=0.39))


def test_a_gap_faster_than_the_floor_asks_for_the_gap_s_inputs():
    found = busy(0.69)
    causes = [f.cause for f in found]
    assert "near-floor" not in causes
    lead = next(f for f in found if f.cause == "wasted-traffic")
    assert not lead.confirmed and lead.next is not None and lead.next.kind == "gap"
    assert "0.69x its memory floor" in lead.title and "G's inputs are off" in lead.title
    assert any("faster than the floor" in e.text for e in lead.evidence)
    # the busy GPU's own question stays: which kernels take the step
    assert "kernel-below-roofline" in causes


def test_a_gap_at_the_floor_within_noise_is_near_floor():
    found = busy(0.95)
    assert found[0].cause == "near-floor"
    assert not any("inputs are off" in f.title for f in found)


def test_a_gap_above_the_floor_asks_nothing_of_the_inputs():
    found = busy(2.0)
    assert not any("inputs are off" in f.title for f in found)
    assert "kernel-below-roofline" in [f.cause for f in found]
