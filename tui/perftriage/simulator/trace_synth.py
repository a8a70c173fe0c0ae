"""SIMULATED torch.profiler (Kineto) traces of the demo's decode steps,
synthesised from a scenario's state (no GPU ran them).

One Chrome trace per TP rank (``traceEvents``) in the shape Kineto writes:

- ``cat: "kernel"`` events (``ph: "X"``, ``pid``: the device) with ``args``
  ``device``, ``stream`` and ``correlation``; a read back is a
  ``cat: "gpu_memcpy"`` ``Memcpy DtoH (Device -> Pinned)``;
- ``cat: "cuda_runtime"`` calls on the host thread with the same
  ``correlation``: ``cudaLaunchKernel`` per kernel when eager,
  ``cudaGraphLaunch`` once per step when CUDA graphs are on (every kernel of
  the step shares its correlation, and the kernels run back to back),
  ``cudaMemcpyAsync`` for a read back, ``cudaStreamSynchronize`` after it;
- ``cat: "cpu_op"`` ops (``aten::mm``, ``aten::_local_scalar_dense``, ...)
  with the ``External id`` their launch calls carry.

Times are microseconds from the trace's own base, as Kineto writes them.
The step is a few layers of a MoE decoder (norm, QKV GEMM, paged decode
attention, output GEMM, all-reduce, norm, router, the MoE backend's grouped
GEMM, its reduce, all-reduce); the kernel names are the usual ones of each
library, the durations made up. What a scenario plants changes the timeline:

- eager: the host spends ``host_per_kernel_us`` per kernel (the op and its
  launch call, ``launch_us`` of it the call): kernels shorter than that wait
  for the host (launch-bound);
- ``step_gap_us``: host time between steps before the next launch (the
  scheduler's Python; a planted stall), which the GPU idles through;
- ``syncs_per_step``: one value read back per layer (``float(t)``): a D2H
  copy, ``cudaStreamSynchronize``, then ``sync_relaunch_us`` on the host
  before the next launch, the queue drained;
- ``comm``: SGLang's custom all-reduce (``cross_device_reduce_1stage``, a
  few µs) or NCCL's ring (``ncclDevKernel_AllReduce_Sum_bf16_RING_LL``)
  after attention and after the MoE; a rank that arrives late makes the
  others wait inside it (``late_rank`` by ``late_us`` each step: its kernels
  start that much later, its collectives stay short, the others' grow).
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

# the MoE runner backend's grouped-GEMM kernel and its duration per layer (µs);
# a faster backend is a shorter kernel (the simulator's BACKEND_SPEEDUP)
MOE_KERNELS = {
    "flashinfer_cutlass": ("void cutlass::device_kernel<flashinfer::cutlass_kernels::"
                           "MoeFCGemm<cutlass::float_e2m1_t, __nv_bfloat16>>", 120.0),
    "triton": ("fused_moe_kernel", 133.0),
    "flashinfer_cutedsl": ("cutedsl_moe_fp4_grouped_gemm_kernel", 20.0),
    "deep_gemm": ("void deep_gemm::fp8_m_grouped_gemm_masked_kernel<128, 128>", 60.0),
}
CUSTOM_AR = "void sglang::cross_device_reduce_1stage<__nv_bfloat16, 8>(sglang::RankData*, "\
            "sglang::RankSignals, sglang::Signal*, __nv_bfloat16*, int, int)"
NCCL_AR = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
D2H = "Memcpy DtoH (Device -> Pinned)"
STREAM = 7
GRAPH_LAUNCH_US = 18.0
KERNEL_GAP_US = 0.5  # back to back on the stream (graph replay, a host ahead)
HOST_PID = 20431  # the scheduler processes' pids: 20431 + rank


@dataclass(frozen=True)
class TraceSpec:
    ranks: int = 8
    steps: int = 6
    layers: int = 4
    graphs: bool = True
    backend: str = "flashinfer_cutlass"
    step_gap_us: float = 0.0  # host time between steps; 0: the next step is queued already
    host_per_kernel_us: float = 30.0  # eager: host time per kernel (its op and launch)
    launch_us: float = 14.0  # eager: the cudaLaunchKernel call's own duration
    syncs_per_step: int = 0
    sync_relaunch_us: float = 180.0
    comm: str = "custom"  # custom | nccl
    comm_us: float = 2.0  # one all-reduce when every rank arrives at once
    late_rank: int | None = None
    late_us: float = 0.0
    kernel_scale: float = 1.0  # slower kernels (lower clocks)


@dataclass
class _Rank:
    """One rank's events and clocks while its steps are laid out."""

    rank: int
    events: list[dict] = field(default_factory=list)
    cpu: float = 0.0  # the host thread's clock
    gpu: float = 0.0  # when the stream is free
    gpu_start: float = 0.0  # when the kernel just launched can start
    corr: int = 1
    ext: int = 1


def _layer_kernels(spec: TraceSpec) -> list[tuple[str, str, float]]:
    """(kernel, the op that launches it, µs) of one layer; ``"AR"`` marks an all-reduce."""
    moe, moe_us = MOE_KERNELS.get(spec.backend, MOE_KERNELS["flashinfer_cutlass"])
    s = spec.kernel_scale
    return [
        ("void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>",
         "sgl_kernel::fused_add_rmsnorm", 6.0 * s),
        ("nvjet_tst_64x8_64x16_4x1_v_bz_TNT", "aten::mm", 24.0 * s),
        ("void flashinfer::BatchDecodeWithPagedKVCacheKernel<true, 4u, 16u, __nv_bfloat16>",
         "sgl_kernel::batch_decode_with_paged_kv_cache", 30.0 * s),
        ("nvjet_tst_64x8_64x16_4x1_v_bz_TNN", "aten::mm", 16.0 * s),
        ("AR", "sglang::all_reduce", 0.0),
        ("void flashinfer::norm::FusedAddRMSNormKernel<8u, __nv_bfloat16>",
         "sgl_kernel::fused_add_rmsnorm", 6.0 * s),
        ("void sglang::moe::topkGatingSoftmax<8, 256, 4, 16, int>", "sgl_kernel::topk_softmax",
         5.0 * s),
        (moe, "sglang::moe_runner", moe_us * s),
        ("void sglang::moe_sum_reduce_kernel<__nv_bfloat16, 8>", "sgl_kernel::moe_sum_reduce",
         8.0 * s),
        ("AR", "sglang::all_reduce", 0.0),
    ]


def step_kernel_us(spec: TraceSpec) -> float:
    """The GPU time of one step's kernels when every rank arrives at once."""
    return spec.layers * sum(spec.comm_us if name == "AR" else us
                             for name, _, us in _layer_kernels(spec))


def _op(r: _Rank, name: str, ts: float, dur: float) -> int:
    ext = r.ext
    r.ext += 1
    r.events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": HOST_PID + r.rank,
                     "tid": HOST_PID + r.rank, "ts": round(ts, 3), "dur": round(dur, 3),
                     "args": {"External id": ext, "Record function id": 0}})
    return ext


def _runtime(r: _Rank, name: str, ts: float, dur: float, corr: int | None,
             ext: int | None) -> None:
    args: dict = {"cbid": 211}
    if corr is not None:
        args["correlation"] = corr
    if ext is not None:
        args["External id"] = ext
    r.events.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": HOST_PID + r.rank,
                     "tid": HOST_PID + r.rank, "ts": round(ts, 3), "dur": round(dur, 3),
                     "args": args})


def _device(r: _Rank, name: str, ts: float, dur: float, corr: int, ext: int | None,
            cat: str = "kernel") -> None:
    args: dict = {"device": r.rank, "stream": STREAM, "correlation": corr}
    if ext is not None:
        args["External id"] = ext
    if cat == "kernel":
        args.update({"queued": 0, "registers per thread": 128, "shared memory": 49152,
                     "grid": [132, 1, 1], "block": [128, 1, 1]})
    else:
        args["bytes"] = 4
    r.events.append({"ph": "X", "cat": cat, "name": name, "pid": r.rank, "tid": STREAM,
                     "ts": round(ts, 3), "dur": round(max(dur, 0.5), 3), "args": args})


def _collective(ranks: list[_Rank], arrive: list[float], spec: TraceSpec, name: str,
                corr: list[int], ext: list[int | None]) -> None:
    """One all-reduce: each rank's kernel runs from its arrival to the last
    arrival plus the collective's own time (a late rank's is short)."""
    done = max(arrive) + spec.comm_us
    for r, a, c, e in zip(ranks, arrive, corr, ext):
        _device(r, name, a, done - a, c, e)
        r.gpu = done


def synthesize(spec: TraceSpec) -> list[dict]:
    """The Chrome trace of each rank, in rank order."""
    ranks = [_Rank(rank=i, cpu=1000.0, gpu=1000.0) for i in range(spec.ranks)]
    layer = _layer_kernels(spec)
    ar_name = NCCL_AR if spec.comm == "nccl" else CUSTOM_AR
    for step in range(spec.steps):
        graph_corr: list[int] = []
        for r in ranks:
            late = spec.late_us if r.rank == spec.late_rank else 0.0
            if spec.graphs:
                # the host's step: scheduler work (or a stall), then one graph launch;
                # with no gap the launch was queued while the previous step ran
                start = r.gpu + spec.step_gap_us + late if (spec.step_gap_us or late) \
                    else r.gpu - GRAPH_LAUNCH_US - 5.0
                r.cpu = max(r.cpu, start)
                c = r.corr
                r.corr += 1
                _runtime(r, "cudaGraphLaunch", r.cpu, GRAPH_LAUNCH_US, c, None)
                r.cpu += GRAPH_LAUNCH_US
                r.gpu = max(r.gpu + KERNEL_GAP_US, r.cpu + 4.0)
                graph_corr.append(c)
            else:
                r.cpu = max(r.cpu, r.gpu + spec.step_gap_us + late if step else r.cpu)
        for li in range(spec.layers):
            for name, op, us in layer:
                if name == "AR":
                    arrive, corrs, exts = [], [], []
                    for i, r in enumerate(ranks):
                        c, e = _launch(r, spec, op, graph_corr[i] if spec.graphs else None)
                        arrive.append(r.gpu_start)
                        corrs.append(c)
                        exts.append(e)
                    _collective(ranks, arrive, spec, ar_name, corrs, exts)
                    continue
                for i, r in enumerate(ranks):
                    c, e = _launch(r, spec, op, graph_corr[i] if spec.graphs else None)
                    _device(r, name, r.gpu_start, us, c, e)
                    r.gpu = r.gpu_start + us
            if li < spec.syncs_per_step and not spec.graphs:  # one per layer, the first ones
                for r in ranks:
                    _read_back(r, spec)
    return [_document(r, spec) for r in ranks]


def _launch(r: _Rank, spec: TraceSpec, op: str, graph_corr: int | None
            ) -> tuple[int, int | None]:
    """The host side of one kernel: under a graph nothing (the kernel runs
    KERNEL_GAP_US after the previous one); eager, its op and launch call.
    Sets ``r.gpu_start``, when the kernel can start."""
    if graph_corr is not None:
        r.gpu_start = r.gpu + KERNEL_GAP_US
        return graph_corr, None
    host = spec.host_per_kernel_us
    ext = _op(r, op, r.cpu, host - 1.0)
    call_at = r.cpu + host - 1.0 - spec.launch_us
    c = r.corr
    r.corr += 1
    _runtime(r, "cudaLaunchKernel", call_at, spec.launch_us, c, ext)
    r.cpu += host
    r.gpu_start = max(r.gpu + KERNEL_GAP_US, call_at + spec.launch_us + 3.0)
    return c, ext


def _read_back(r: _Rank, spec: TraceSpec) -> None:
    """``float(t)``: a D2H copy launched by ``aten::_local_scalar_dense``, the
    host blocked in ``cudaStreamSynchronize`` until the GPU drained, then
    ``sync_relaunch_us`` of host work before the next launch."""
    copy_at = max(r.gpu + KERNEL_GAP_US, r.cpu + 10.0)
    sync_at = r.cpu + 9.0
    sync_end = max(sync_at + 3.0, copy_at + 1.5 + 4.0)
    ext = _op(r, "aten::_local_scalar_dense", r.cpu, sync_end - r.cpu + 1.0)
    c = r.corr
    r.corr += 1
    _runtime(r, "cudaMemcpyAsync", r.cpu + 2.0, 6.0, c, ext)
    _device(r, D2H, copy_at, 1.5, c, ext, cat="gpu_memcpy")
    r.gpu = copy_at + 1.5
    _runtime(r, "cudaStreamSynchronize", sync_at, sync_end - sync_at, None, None)
    r.cpu = sync_end + spec.sync_relaunch_us


def _document(r: _Rank, spec: TraceSpec) -> dict:
    meta = [
        {"ph": "M", "name": "process_name", "pid": HOST_PID + r.rank, "tid": 0,
         "args": {"name": f"python3 (SIMULATED scheduler TP{r.rank})"}},
        {"ph": "M", "name": "process_name", "pid": r.rank, "tid": 0,
         "args": {"name": f"GPU {r.rank} (SIMULATED)"}},
    ]
    return {"schemaVersion": 1, "simulated": True,
            "distributedInfo": {"backend": "nccl", "rank": r.rank, "world_size": spec.ranks},
            "deviceProperties": [{"id": r.rank, "name": "SIMULATED GPU"}],
            "traceEvents": meta + sorted(r.events, key=lambda e: e["ts"])}


def write(spec: TraceSpec, directory: Path | str, stem: str) -> list[Path]:
    """Write each rank's trace as ``{stem}-TP-{r}.trace.json.gz`` (under a
    temporary name, then renamed: a reader never sees half of one)."""
    out = []
    for r, doc in enumerate(synthesize(spec)):
        target = Path(directory) / f"{stem}-TP-{r}.trace.json.gz"
        part = target.with_name(target.name + ".part")
        part.write_bytes(gzip.compress(json.dumps(doc).encode(), compresslevel=5))
        os.replace(part, target)
        out.append(target)
    return out
