"""Bytes a decode step must read, from the roofline's weights, against what
Nsight Compute says the step's kernels read.

The roofline (``perftriage roofline``/``gap``) knows the weights one decode
step must stream (``--weights-gb``, all GPUs together, the active experts
only for an MoE) and the GPU count; a GPU of a tensor-parallel group holds
``1/gpus`` of them. An ncu capture of ``steps`` decode steps on one of those
GPUs then gives, per kernel bucket (:mod:`buckets`: the same names the
Profile view uses)::

    read per step = DRAM bytes read by the bucket's kernels / steps
    ratio         = read per step / (bytes the bucket must read per GPU)

- ``weights`` — GEMM and MoE kernels together against all the weights;
- with ``--expert-gb E`` (the routed experts' share of the weights):
  ``moe`` against E, ``gemm`` against the dense rest (weights − E);
- with ``--kv-gb K``: ``attention`` against the KV cache.

"1.0× the bytes it must" is a bucket that reads its weights once; "2.0× —
it reads its weights twice" the unfused double read. The capture's other
kernels (weight initialisation, casts, norms) are left out: only the buckets
that read weights are compared, so a capture that also holds set-up work
still compares. A bucket with no kernel in the capture gets no row (a
``--kernel`` filter), never 0×; a bucket whose launches had ``n/a`` values
says so (its read is then a lower bound). The step count is the user's:
ncu's CSV cannot say where a step ends (a period in the launch order is a
layer as often as a step).
"""

from __future__ import annotations

from collections.abc import Iterable

from perftriage.core.profile import buckets
from perftriage.core.profile.ncu import NcuKernel, StepRead

WEIGHTS = "weights"
WEIGHT_BUCKETS = (buckets.GEMM, buckets.MOE)


class StepReadError(ValueError):
    """Inconsistent inputs (e.g. experts larger than all the weights)."""


def _row(bucket: str, must: str, members: list[NcuKernel], must_bytes: float,
         steps: int) -> StepRead | None:
    if not members or must_bytes <= 0:
        return None
    members = sorted(members, key=lambda k: (-k.bytes_read, k.name))
    per_step = sum(k.bytes_read for k in members) / steps
    return StepRead(bucket=bucket, must=must, kernels=[k.name for k in members],
                    read_per_step=round(per_step), must_read=round(must_bytes),
                    read_ratio=round(per_step / must_bytes, 2),
                    na_launches=sum(k.na_launches for k in members))


def step_reads(kernels: Iterable[NcuKernel], *, weights_gb: float, steps: int, gpus: int = 1,
               expert_gb: float | None = None, kv_gb: float | None = None,
               classifier: buckets.Classifier | None = None) -> list[StepRead]:
    """Rows for the buckets present (see the module doc). Sizes in GB
    (1e9 bytes) like the roofline's; all must be > 0 (``expert_gb`` <
    ``weights_gb``), ``steps`` and ``gpus`` ≥ 1 — the CLI checks them."""
    if expert_gb is not None and expert_gb >= weights_gb:
        raise StepReadError(f"--expert-gb {expert_gb:g} must be less than --weights-gb "
                            f"{weights_gb:g} (the experts are part of the weights)")
    classify = classifier or buckets.Classifier()
    by_bucket: dict[str, list[NcuKernel]] = {}
    for k in kernels:
        by_bucket.setdefault(classify.bucket(k.name), []).append(k)
    per_gpu = 1e9 / gpus
    weight_kernels = [k for b in WEIGHT_BUCKETS for k in by_bucket.get(b, [])]
    rows = [_row(WEIGHTS, "weights", weight_kernels, weights_gb * per_gpu, steps)]
    if expert_gb is not None:
        rows.append(_row(buckets.MOE, "expert weights", by_bucket.get(buckets.MOE, []),
                         expert_gb * per_gpu, steps))
        rows.append(_row(buckets.GEMM, "dense weights", by_bucket.get(buckets.GEMM, []),
                         (weights_gb - expert_gb) * per_gpu, steps))
    if kv_gb:
        rows.append(_row(buckets.ATTENTION, "KV cache", by_bucket.get(buckets.ATTENTION, []),
                         kv_gb * per_gpu, steps))
    return [r for r in rows if r is not None]
