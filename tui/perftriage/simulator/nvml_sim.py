"""SIMULATED GPUs for the demo's scenarios: the simulated SGLang server says
what its GPUs would read (``GET /simulated/gpus`` on its port, from the
scenario's state), and :class:`SimulatedNvml` answers the pynvml calls
perftriage's local sampler and GPM counters make with those readings.

``perftriage demo --scenario NAME`` puts a :class:`SimulatedNvml` in place of
``pynvml`` for its own process (:func:`installed`), so the cockpit's
ordinary NVML path — the host sampler's utilisation, clocks and clock-event
reasons, the GPM DRAM counters the gap (``G``) reads — runs on them with no
GPU. Every GPU's name ends in "(SIMULATED)" and the driver version reads
"simulated"; nothing here touches a real GPU. Before the server answers (its
start-up) the GPUs read idle.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, cast

from perftriage.simulator.scenarios import (
    BUS_WIDTH_BITS,
    GPU_NAME,
    MEM_CLOCK_MAX_MHZ,
    SM_CLOCK_MAX_MHZ,
    Scenario,
)

POWER_LIMIT_W = 600.0
MEM_TOTAL_MIB = 97887
CACHE_S = 0.5  # readings are fetched at most this often


def gpu_readings(sc: Scenario, backend: str, tp: int, rng: random.Random) -> dict[str, Any]:
    """What the scenario's GPUs read now (the server's ``/simulated/gpus``)."""
    gpus = []
    for i in range(tp):
        util = max(0.0, min(100.0, sc.util_pct() + rng.uniform(-1.0, 1.0)))
        slow = sc.throttle_mask != 0
        clock = SM_CLOCK_MAX_MHZ * (sc.clock_ratio if slow else 1.0)
        dram = sc.dram_busy_pct(backend) * rng.uniform(0.98, 1.02)
        gpus.append({
            "index": i, "util": round(util), "mem_util": round(dram),
            "sm_clock": round(clock), "mem_clock": MEM_CLOCK_MAX_MHZ,
            "throttle": sc.throttle_mask if slow else 0,
            "power_w": round(POWER_LIMIT_W * (0.35 + 0.6 * util / 100.0) * (
                sc.clock_ratio if slow else 1.0), 1),
            "temp_c": 78 if slow else 64,
            "dram": round(dram, 2), "sm": round(util * 0.92, 2), "occ": round(util * 0.4, 2),
            "tensor": round(util * 0.3, 2),
            "mem_used_mib": round(MEM_TOTAL_MIB * sc.gpu_mem_pct() / 100.0)})
    return {"simulated": True, "scenario": sc.name, "pid": os.getpid(), "gpus": gpus}


class _Metric:
    __slots__ = ("metricId", "nvmlReturn", "value")

    def __init__(self) -> None:
        self.metricId = 0
        self.value = 0.0
        self.nvmlReturn = 0


class GpmMetricsGet:
    """pynvml's ``c_nvmlGpmMetricsGet_t``: the metrics asked for and their values."""

    def __init__(self) -> None:
        self.version = 0
        self.numMetrics = 0
        self.sample1: Any = None
        self.sample2: Any = None
        self.metrics = [_Metric() for _ in range(98)]


class SimulatedNvmlError(Exception):
    """What a pynvml call raises here (pynvml's NVMLError)."""


class SimulatedNvml:
    """The pynvml calls the cockpit makes, answered from the simulated server's
    ``/simulated/gpus`` (``url``); ``count`` GPUs."""

    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0
    NVML_GPM_METRICS_GET_VERSION = 1
    NVMLError = SimulatedNvmlError
    c_nvmlGpmMetricsGet_t = GpmMetricsGet  # pynvml's name
    # GPM metric ids (nvml.h) -> the reading's key
    _GPM = {10: "dram", 2: "sm", 3: "occ", 5: "tensor"}

    def __init__(self, url: str, count: int) -> None:
        self.url = url
        self.count = count
        self._lock = threading.Lock()
        self._at = -1e9
        self._gpus: list[dict[str, Any]] = []
        self.pid: int | None = None

    # --- the readings -------------------------------------------------------
    def _read(self) -> list[dict[str, Any]]:
        with self._lock:
            if time.monotonic() - self._at >= CACHE_S:
                self._at = time.monotonic()
                try:
                    with urllib.request.urlopen(self.url, timeout=1.0) as resp:  # noqa: S310
                        doc = json.loads(resp.read())
                    self._gpus, self.pid = list(doc["gpus"]), doc.get("pid")
                except (OSError, ValueError, KeyError, TypeError):
                    self._gpus, self.pid = [], None  # not up yet (or gone): idle GPUs
            return self._gpus

    def _gpu(self, h: SimpleNamespace) -> dict[str, Any]:
        got = self._read()
        return got[h.index] if h.index < len(got) else {"index": h.index}

    # --- init / devices -----------------------------------------------------
    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        pass

    def nvmlSystemGetDriverVersion(self) -> str:
        return "simulated"

    def nvmlDeviceGetCount(self) -> int:
        return self.count

    def nvmlDeviceGetHandleByIndex(self, i: int) -> SimpleNamespace:
        if not 0 <= i < self.count:
            raise SimulatedNvmlError("Invalid Argument")
        return SimpleNamespace(index=i)

    def nvmlDeviceGetName(self, h) -> str:
        return GPU_NAME

    def nvmlDeviceGetUUID(self, h) -> str:
        return f"GPU-5140a7ed-0000-4000-8000-{h.index:012d}"

    def nvmlDeviceGetMemoryBusWidth(self, h) -> int:
        return BUS_WIDTH_BITS

    def nvmlDeviceGetMaxClockInfo(self, h, kind: int) -> int:
        return MEM_CLOCK_MAX_MHZ if kind == self.NVML_CLOCK_MEM else SM_CLOCK_MAX_MHZ

    def nvmlDeviceGetClockInfo(self, h, kind: int) -> int:
        g = self._gpu(h)
        if kind == self.NVML_CLOCK_MEM:
            return int(g.get("mem_clock", MEM_CLOCK_MAX_MHZ))
        return int(g.get("sm_clock", 210))  # an idle GPU's clock

    def nvmlDeviceGetMigMode(self, h) -> list[int]:
        return [0, 0]

    def nvmlDeviceGetUtilizationRates(self, h) -> SimpleNamespace:
        g = self._gpu(h)
        return SimpleNamespace(gpu=int(g.get("util", 0)), memory=int(g.get("mem_util", 0)))

    def nvmlDeviceGetMemoryInfo(self, h) -> SimpleNamespace:
        used = int(self._gpu(h).get("mem_used_mib", 0))  # the scenario's (0: not up yet)
        return SimpleNamespace(used=used * 2**20, total=MEM_TOTAL_MIB * 2**20,
                               free=(MEM_TOTAL_MIB - used) * 2**20)

    def nvmlDeviceGetPowerUsage(self, h) -> int:
        return int(1000 * self._gpu(h).get("power_w", 90.0))

    def nvmlDeviceGetEnforcedPowerLimit(self, h) -> int:
        return int(1000 * POWER_LIMIT_W)

    def nvmlDeviceGetTemperature(self, h, sensor: int) -> int:
        return int(self._gpu(h).get("temp_c", 40))

    def nvmlDeviceGetPerformanceState(self, h) -> int:
        return 0 if self._gpu(h).get("util") else 8

    def nvmlDeviceGetCurrentClocksEventReasons(self, h) -> int:
        g = self._gpu(h)
        return int(g.get("throttle", 0)) or (0x1 if not g.get("util") else 0)  # 0x1: GPU idle

    def nvmlDeviceGetComputeRunningProcesses(self, h) -> list[SimpleNamespace]:
        self._read()
        used = int(self._gpu(h).get("mem_used_mib", 0))
        return [] if self.pid is None else [SimpleNamespace(pid=self.pid,
                                                            usedGpuMemory=used * 2**20)]

    # --- GPM --------------------------------------------------------------------
    def nvmlGpmQueryDeviceSupport(self, h) -> SimpleNamespace:
        return SimpleNamespace(isSupportedDevice=1)

    def nvmlGpmSampleAlloc(self) -> SimpleNamespace:
        return SimpleNamespace(device=None)

    def nvmlGpmSampleFree(self, s) -> None:
        pass

    def nvmlGpmSampleGet(self, h, s) -> SimpleNamespace:
        s.device = h.index
        return s

    def nvmlGpmMetricsGet(self, mg: GpmMetricsGet) -> GpmMetricsGet:
        g = self._gpu(SimpleNamespace(index=mg.sample2.device))
        for k in range(mg.numMetrics):
            m = mg.metrics[k]
            m.value = float(g.get(self._GPM.get(m.metricId, ""), 0.0))
            m.nvmlReturn = 0
        return mg


@contextlib.contextmanager
def installed(url: str, count: int) -> Iterator[SimulatedNvml]:
    """``import pynvml`` gets a :class:`SimulatedNvml` of ``url`` until the end
    of the block (the module that was there before comes back)."""
    nvml = SimulatedNvml(url, count)
    before = sys.modules.get("pynvml")
    sys.modules["pynvml"] = cast(Any, nvml)  # a module face: the calls pynvml has
    try:
        yield nvml
    finally:
        if sys.modules.get("pynvml") is nvml:
            if before is None:
                del sys.modules["pynvml"]
            else:
                sys.modules["pynvml"] = before
