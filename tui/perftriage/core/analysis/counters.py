"""Raw GPM readings (NVML or ``nvidia-smi dmon``) -> :class:`GpuCounters`.

Turns a DRAM utilisation percentage into GB/s with the GPU's peak, NVLink
MiB/s into GB/s, and flags counters stuck at 0 while the GPU is busy (a VM
or another profiler can leave GPM reading zeros): such readings are not
trusted, and the Gap view says so instead of reporting an idle memory.
"""

from __future__ import annotations

from perftriage.core.model.events import GpuCounters

MIB = 1024 * 1024
STUCK_AFTER = 3  # intervals of all-zero counters while busy before we say so
BUSY_UTIL_PCT = 50.0


def mibs_to_gbs(mibs: float | None) -> float | None:
    return None if mibs is None else round(mibs * MIB / 1e9, 2)


def make_counters(index: int, *, name: str = "", peak_gbs: float | None = None,
                  dram_busy_pct: float | None = None, sm_active_pct: float | None = None,
                  sm_occupancy_pct: float | None = None, tensor_active_pct: float | None = None,
                  nvlink_rx_gbs: float | None = None, nvlink_tx_gbs: float | None = None,
                  util_pct: float | None = None) -> GpuCounters:
    bw = round(dram_busy_pct / 100.0 * peak_gbs, 1) if dram_busy_pct is not None and peak_gbs else None
    return GpuCounters(
        index=index, name=name, peak_gbs=peak_gbs, dram_busy_pct=_r(dram_busy_pct),
        dram_bw_gbs=bw, sm_active_pct=_r(sm_active_pct), sm_occupancy_pct=_r(sm_occupancy_pct),
        tensor_active_pct=_r(tensor_active_pct), nvlink_rx_gbs=nvlink_rx_gbs,
        nvlink_tx_gbs=nvlink_tx_gbs, util_pct=util_pct,
    )


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 2)


class StuckDetector:
    """Per GPU: how many intervals in a row every counter read 0 while
    ``utilization.gpu`` said the GPU was busy."""

    def __init__(self, after: int = STUCK_AFTER) -> None:
        self.after = after
        self._runs: dict[int, int] = {}

    def check(self, c: GpuCounters) -> GpuCounters:
        zeros = (c.dram_busy_pct == 0 and c.sm_active_pct in (0, None)
                 and c.util_pct is not None and c.util_pct >= BUSY_UTIL_PCT)
        run = self._runs.get(c.index, 0) + 1 if zeros else 0
        self._runs[c.index] = run
        c.stuck = run >= self.after
        return c
