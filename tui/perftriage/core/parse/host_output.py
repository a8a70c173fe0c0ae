"""What a host prints about itself: the info command (``nvidia-smi topo -m``
and NVML bus widths, framed by ``@@topo`` / ``@@nvml`` / ``@@end``) and the
one-shot snapshot of ``perftriage status`` (two /proc frames, then the
``--query-gpu`` CSV or ``@@nogpu``)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence

from perftriage.core.model.events import HostSample
from perftriage.core.parse import nvsmi
from perftriage.core.parse.proc import ProcFrame, ProcFrames, cpu_pct


def parse_info(text: str) -> dict:
    """Output of :func:`info_command` -> HostInfo payload."""
    sections: dict[str, list[str]] = {}
    cur = None
    for line in text.splitlines():
        if line in ("@@topo", "@@nvml", "@@end"):
            cur = line[2:]
            sections[cur] = []
        elif cur is not None:
            sections[cur].append(line)
    info: dict = {}
    topo_text = "\n".join(sections.get("topo", []))
    topo = nvsmi.parse_topo(topo_text)
    if topo is not None:
        info["topo"] = topo.to_dict()
    elif topo_text.strip():
        info["topo_error"] = nvsmi.strip_ansi(topo_text.strip().splitlines()[0])[:200]
    raw = "\n".join(sections.get("nvml", [])).strip()
    if raw:
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            per = {k: nvsmi.bandwidth_gbs(v[0], v[1]) for k, v in json.loads(raw).items()}
            info["bandwidth_gbs"] = per
            info["bus_width_bits"] = {k: v[0] for k, v in json.loads(raw).items()}
            total = sum(v for v in per.values() if v)
            info["bandwidth_gbs_total"] = round(total, 1) if total else None
    return info


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
