"""The one-shot snapshot of ``perftriage status`` (two /proc frames, then
the ``--query-gpu`` CSV or ``@@nogpu``; the command is
``services.remote_sampler.snapshot_command``) as one ``host.sample`` event."""

from __future__ import annotations

from collections.abc import Sequence

from perftriage.core.model.events import HostSample
from perftriage.core.parse import nvsmi
from perftriage.core.parse.proc import ProcFrame, ProcFrames, cpu_pct


def parse_snapshot(name: str, text: str, fields: Sequence[str] = nvsmi.QUERY_FIELDS) -> HostSample:
    """Output of :func:`snapshot_command` -> one HostSample."""
    lines = text.splitlines()
    try:
        cut = lines.index("@@gpu")
    except ValueError:
        cut = len(lines)
    frames = ProcFrames().feed(lines[:cut])
    gpu_lines = lines[cut + 1:]
    f = frames[-1] if frames else ProcFrame()
    cpu = cpu_pct(frames[0].cpu, frames[1].cpu) if len(frames) >= 2 else None
    per = ([p for p in (cpu_pct(a, b) for a, b in zip(frames[0].per_cpu, frames[1].per_cpu,
                                                         strict=False)) if p is not None]
           if len(frames) >= 2 else [])
    gpus = nvsmi.parse_query_csv("\n".join(gpu_lines), fields)
    gpu_error = None
    if "@@nogpu" in gpu_lines:
        gpu_error = "no NVIDIA GPU (nvidia-smi not found)"
    elif not gpus:
        first = next((l.strip() for l in gpu_lines if l.strip()), "no output")
        gpu_error = f"no NVIDIA GPU (nvidia-smi: {nvsmi.strip_ansi(first)[:200]})"
    avail = f.mem_available if f.mem_available is not None else f.mem_free
    return HostSample(
        host=name, cpu_pct=cpu, per_cpu_pct=per,
        mem_used_bytes=f.mem_total - avail if f.mem_total is not None and avail is not None else None,
        mem_total_bytes=f.mem_total,
        load1=f.load[0] if f.load else None, load5=f.load[1] if f.load else None,
        load15=f.load[2] if f.load else None, gpus=gpus, gpu_error=gpu_error,
    )
