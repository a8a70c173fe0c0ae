"""What one GPU reports at one instant, as every GPU parser returns it
(nvidia-smi CSV and reports, NVML). Plain data, not an event: the
``host.sample`` event (:mod:`perftriage.core.model.events`) carries a list.
"""

from __future__ import annotations

import msgspec


class GpuProcess(msgspec.Struct, omit_defaults=True):
    pid: int
    name: str = ""
    used_mib: float | None = None


class GpuSample(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One GPU at one instant. Field names match ``perftriage status --json``."""

    index: int
    name: str = ""
    uuid: str = ""
    util_pct: float | None = None
    mem_util_pct: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temp_c: float | None = None
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_mhz: float | None = None
    mem_clock_max_mhz: float | None = None
    pstate: str | None = None
    throttle: list[str] = []
    processes: list[GpuProcess] = []
    bus_width_bits: int | None = None
    bandwidth_gbs: float | None = None
