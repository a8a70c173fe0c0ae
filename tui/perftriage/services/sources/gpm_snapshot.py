"""One reading of the GPM counters of a host, for ``perftriage status`` and
``perftriage gap``: locally two NVML GPM samples a window apart, remotely one
``nvidia-smi dmon --gpm-metrics 10,2,3,5 -d 1 -c 3`` (GPM prints ``-`` for the
first two intervals, so the third row is the reading).
"""

from __future__ import annotations

import asyncio

from perftriage.core.analysis import counters as cnt
from perftriage.core.gpus import peak_bandwidth
from perftriage.core.model.events import GpuCounters
from perftriage.core.parse import dmon
from perftriage.core.sanitize import visible
from perftriage.services.sources.gpm_local import NvmlGpm
from perftriage.transport.base import TransportError

# status --json per-GPU keys (public interface) -> GpuCounters attribute
STATUS_FIELDS = {
    "dram_bw_pct": "dram_busy_pct",
    "dram_bw_gbs": "dram_bw_gbs",
    "sm_active_pct": "sm_active_pct",
    "sm_occupancy_pct": "sm_occupancy_pct",
    "tensor_active_pct": "tensor_active_pct",
}


def is_local(host) -> bool:
    return bool(host.local and host.config.preamble is None)


async def local_counters(window_s: float = 1.0, nvml=None) -> tuple[list[GpuCounters], str | None]:
    reader = await asyncio.to_thread(NvmlGpm, nvml)
    if reader.error:
        return [], reader.error
    try:
        await asyncio.to_thread(reader.read)
        await asyncio.sleep(window_s)
        got = await asyncio.to_thread(reader.read)
    finally:
        reader.close()
    skipped = "; ".join(f"GPU {i}: {why}" for i, why in sorted(reader.skipped.items()))
    return got, skipped or None


async def remote_counters(transport, names: dict[int, str], timeout: float = 20.0,
                          nvml_gbs: dict[str, float | None] | None = None,
                          ) -> tuple[list[GpuCounters], str | None]:
    try:
        res = await transport.run(dmon.dmon_command(count=3) + " 2>&1", timeout=timeout)
    except TransportError as exc:
        return [], f"nvidia-smi dmon: {exc.reason}"
    lines = res.stdout.splitlines()
    samples = [s for s in dmon.parse(res.stdout) if any(r.has_gpm for r in s)]
    if not samples:
        why = dmon.unavailable_reason(lines)
        first = next((ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")), "")
        return [], why or f"nvidia-smi dmon gave no GPM values ({visible(first)[:120] or 'no output'})"
    out = []
    for r in samples[-1]:
        name = names.get(r.index, "")
        peak = peak_bandwidth(name, measured_gbs=(nvml_gbs or {}).get(str(r.index)))
        out.append(cnt.make_counters(
            r.index, name=name, peak_gbs=peak.gbs, dram_busy_pct=r.dram_busy_pct,
            sm_active_pct=r.sm_active_pct, sm_occupancy_pct=r.sm_occupancy_pct,
            tensor_active_pct=r.tensor_active_pct, nvlink_rx_gbs=cnt.mibs_to_gbs(r.nvlink_rx_mibs),
            nvlink_tx_gbs=cnt.mibs_to_gbs(r.nvlink_tx_mibs), util_pct=r.util_pct))
    return out, None


async def host_counters(host, timeout: float = 20.0, names: dict[int, str] | None = None,
                        window_s: float = 1.0) -> tuple[list[GpuCounters], str | None, str]:
    """(counters, error, source) for a :class:`perftriage.services.hosts.registry.Host`."""
    if is_local(host):
        got, err = await local_counters(window_s)
        return got, err, "nvml-gpm" if got else "unavailable"
    got, err = await remote_counters(host.transport, names or {}, timeout)
    return got, err, "nvidia-smi-dmon" if got else "unavailable"


def merge_into_status(host_json: dict, counters: list[GpuCounters], error: str | None) -> dict:
    """Add the GPM keys to each GPU of a ``status --json`` host entry (null + gpm_error when n/a)."""
    by_index = {c.index: c for c in counters}
    for g in host_json.get("gpus", []):
        c = by_index.get(g.get("index"))
        for key, attr in STATUS_FIELDS.items():
            g[key] = getattr(c, attr) if c is not None else None
        if c is not None and g.get("dram_bw_gbs") is None and c.dram_busy_pct is not None:
            peak = peak_bandwidth(g.get("name"), measured_gbs=g.get("bandwidth_gbs"))
            if peak.gbs:
                g["dram_bw_gbs"] = round(c.dram_busy_pct / 100 * peak.gbs, 1)
        g["gpm_error"] = None if c is not None and c.dram_busy_pct is not None else (
            error or "no GPM reading for this GPU")
    return host_json
