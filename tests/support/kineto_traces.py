"""Small Kineto traces built by hand, each gap known (tests of issue 48: gap
lengths, the op spanning a gap, HIP launches, distributedInfo ranks)."""

from __future__ import annotations

import json
from pathlib import Path

EPOCH = 1_700_000_000_000_000.0  # µs: Nov 2023, as Kineto before ~2.3 writes ts


def ev(cat: str, name: str, ts: float, dur: float, corr: int | None = None,
        stream: int | None = None, pid: int = 0, ext: int | None = None) -> dict:
    args: dict = {}
    if corr is not None:
        args["correlation"] = corr
    if stream is not None:
        args["stream"] = stream
    if ext is not None:
        args["External id"] = ext
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": 1, "ts": ts, "dur": dur,
            "args": args}


def write(path: Path, events: list[dict], **header) -> Path:
    path.write_text(json.dumps({"traceEvents": events, **header}))
    return path


def step_trace(t0: float, stall_us: float, steps: int = 4, launch: str = "cudaLaunchKernel",
                op: str | None = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
                kernels: int = 20) -> list[dict]:
    """Eager steps of ``kernels`` 5 µs kernels, each launched 20 µs apart (short
    gaps: launch overhead), and before each step a host stall of ``stall_us``
    (spanned by ``op``)."""
    out: list[dict] = []
    t = t0
    corr = 1
    for _ in range(steps):
        if op is not None:
            out.append(ev("cpu_op", op, t, stall_us, ext=10_000 + corr))
        t += stall_us
        for _ in range(kernels):
            out.append(ev("cuda_runtime", launch, t, 10, corr))
            out.append(ev("kernel", "void gemm_kernel", t + 12, 5, corr, stream=7))
            t += 20
            corr += 1
    return out


def rank_trace(tmp_path: Path, name: str, rank: int, world: int, t0: float = 0.0,
          gpu: str = "NVIDIA H100", base: int = 1_700_000_000_000_000_000) -> Path:
    events = step_trace(t0, 0.0, op=None, steps=1)
    return write(tmp_path / name, events, distributedInfo={
        "rank": rank, "world_size": world, "backend": "nccl",
        "pg_config": [{"pg_name": "0", "pg_size": world}]},
        deviceProperties=[{"id": 0, "name": gpu}], baseTimeNanoseconds=base)
