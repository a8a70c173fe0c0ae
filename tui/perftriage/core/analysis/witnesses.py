"""Three witnesses of one GPU's memory traffic, and what it means when two disagree.

- **achieved**: what DRAM moved, from the GPM counters (or dmon);
- **useful**: what the tokens needed, bytes per step (the roofline inputs)
  x decode steps per second / GPUs;
- **engine**: the engine's own estimate of what it read per GPU (SGLang's
  ``est. read BW (GB/s per GPU)`` with ``--enable-mfu-metrics`` or
  ``sglang:estimated_read_bytes_per_gpu_total``; vLLM's ``MFU:`` line or
  ``vllm:estimated_read_bytes_per_gpu_total``).

Two witnesses that differ by more than :data:`DISAGREE` (1.5x) name a
cause: the engine and the roofline inputs both model the bytes, so a split
between them says the inputs are wrong; DRAM moving more than both models
says traffic neither counts (dtype conversions, unfused kernels, or another
process on the GPU); DRAM moving more than the engine alone says the
engine's model misses conversions; the engine alone against the other two
(which agree) says its model of bytes is the odd one out. Pure arithmetic,
no Textual.
"""

from __future__ import annotations

from dataclasses import dataclass

DISAGREE = 1.5  # a ratio above this between two witnesses is a disagreement

MEANING = {
    ("achieved", "engine", "above"): (
        "DRAM moves more than the engine thinks it reads: its model of bytes misses dtype "
        "conversions or unfused kernels, or another process shares the GPU"),
    ("achieved", "engine", "below"): (
        "the engine estimates more reads than DRAM moved: its model over-counts (cache hits "
        "counted as reads?) or the counters miss traffic"),
    ("useful", "engine", "above"): (
        "the roofline inputs need more bytes than the engine reads: the inputs are wrong "
        "(weights, active parameters, bits or KV too high?)"),
    ("useful", "engine", "below"): (
        "the engine reads more than the roofline inputs say a step needs: the inputs are "
        "wrong (weights, active parameters, bits or KV too low?)"),
    ("engine", "both", "below"): (
        "DRAM moves what the roofline inputs say, but the engine estimates less: its model "
        "of bytes misses traffic (dtype conversions, KV reads)"),
    ("engine", "both", "above"): (
        "DRAM moves what the roofline inputs say, but the engine estimates more: its model "
        "counts bytes that are not read (cache hits, skipped experts?)"),
    ("achieved", "both", "above"): (
        "DRAM moves more than both models of the bytes: traffic neither counts (dtype "
        "conversions, unfused kernels) or another process shares the GPU"),
}


@dataclass
class Disagreement:
    pair: str  # "achieved/engine", "useful/engine", "achieved/useful+engine"
    ratio: float  # the larger over the smaller
    words: str


def _ratio(a: float, b: float) -> float:
    return max(a, b) / min(a, b)


def disagreement(achieved: float | None, useful: float | None,
                 engine: float | None) -> Disagreement | None:
    """The disagreement that involves the engine's estimate, or None (no
    estimate, or every pair within :data:`DISAGREE`). Achieved against useful
    alone is the traffic ratio's (a figure of the gap; the triage judges it)."""
    if engine is None or engine <= 0:
        return None
    ok = [v is not None and v > 0 for v in (achieved, useful)]
    if ok[0] and ok[1]:
        assert achieved is not None and useful is not None
        if (achieved / engine > DISAGREE and achieved / useful > DISAGREE
                and _ratio(useful, engine) <= DISAGREE):
            return Disagreement("achieved/useful+engine", achieved / max(useful, engine),
                                MEANING[("achieved", "both", "above")])
        if _ratio(achieved, useful) <= DISAGREE and min(
                _ratio(achieved, engine), _ratio(useful, engine)) > DISAGREE:
            side = "below" if engine < achieved else "above"
            return Disagreement("engine/achieved+useful",
                                min(_ratio(achieved, engine), _ratio(useful, engine)),
                                MEANING[("engine", "both", side)])
    if ok[1]:
        assert useful is not None
        if _ratio(useful, engine) > DISAGREE:
            side = "above" if useful > engine else "below"
            return Disagreement("useful/engine", _ratio(useful, engine),
                                MEANING[("useful", "engine", side)])
    if ok[0]:
        assert achieved is not None
        if _ratio(achieved, engine) > DISAGREE:
            side = "above" if achieved > engine else "below"
            return Disagreement("achieved/engine", _ratio(achieved, engine),
                                MEANING[("achieved", "engine", side)])
    return None
