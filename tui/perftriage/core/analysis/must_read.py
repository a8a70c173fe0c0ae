"""Bytes a decode step must read, in the cockpit: the latest ``ncu`` probe's
kernels against the recorded gap's weights.

The gap (``G``, a ``gap.computed`` event) holds the roofline's inputs: the
weights one decode step must stream (``weights_gb``, or ``active_params_b`` ×
``bits``), the GPU count and the KV cache. The ncu probe says how many decode
steps its command ran (``--steps N``, kept in its detail as ``step_read``,
with ``--expert-gb E``). Together they give :func:`ncu_step_read.step_reads`'
rows — "moe (fused_moe_kernel): 1.0× the bytes it must" — for the Gap view's
"where the bandwidth goes" and the report. Missing either, one line says what
to give.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from perftriage.core.analysis import roofline
from perftriage.core.profile.ncu_join import latest_summary
from perftriage.core.profile.ncu_step_read import StepReadError, step_reads
from perftriage.core.profile.ncu_table import step_read_line

NO_GAP = "bytes it must read: record the gap (G) for the weights a decode step must read"
NO_STEPS = ("bytes it must read: give the ncu probe --steps N (the decode steps its command "
            "runs) to compare them with the gap's weights")


def gap_weights(inputs: dict[str, Any]) -> tuple[float, int, float | None] | None:
    """(weights GB per step, GPUs, KV GB) from a recorded gap's inputs, or
    None when they do not say (or say something the roofline refuses)."""
    try:
        weights = roofline.bytes_per_step_gb(inputs.get("weights_gb"),
                                             inputs.get("active_params_b"), inputs.get("bits"))
        gpus = int(inputs.get("gpus") or 1)
        kv = inputs.get("kv_gb")
        return weights, max(gpus, 1), float(kv) if kv else None
    except (roofline.RooflineError, TypeError, ValueError):
        return None


def must_read_lines(probes: Iterable[Any], gaps: Sequence[Any]) -> list[str]:
    """Plain lines (remote kernel names shortened and sanitised): one per
    bucket, or one saying what is missing; none without an ncu result."""
    probes = list(probes)
    got = latest_summary(probes)
    if got is None:
        return []
    probe_id, summary = got
    probe = next(p for p in probes if p.probe_id == probe_id)
    basis = gap_weights(gaps[-1].inputs) if gaps else None
    if basis is None:
        return [NO_GAP]
    asked = probe.detail.get("step_read")
    if not isinstance(asked, dict) or not isinstance(asked.get("steps"), int):
        return [NO_STEPS]
    weights_gb, gpus, kv_gb = basis
    expert_gb = asked.get("expert_gb")
    try:
        rows = step_reads(summary.kernels, weights_gb=weights_gb, steps=max(asked["steps"], 1),
                          gpus=gpus, expert_gb=float(expert_gb) if expert_gb else None,
                          kv_gb=kv_gb)
    except StepReadError as exc:
        return [f"bytes it must read: {exc}"]
    if not rows:
        return ["bytes it must read: no GEMM or MoE kernel in the ncu result"]
    head = (f"bytes a decode step must read (per GPU of {gpus}, the gap's {weights_gb:g} GB "
            f"of weights, {asked['steps']} steps):")
    return [head, *(step_read_line(r) for r in rows)]
