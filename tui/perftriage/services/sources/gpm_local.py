"""Per-GPU bandwidth counters (NVML GPM) of this machine as a Source (the
remote one is :mod:`perftriage.services.sources.gpm_remote`).

Local: ``nvmlGpmQueryDeviceSupport`` once per GPU, then one GPM sample per GPU
per interval (two buffers, swapped) and ``nvmlGpmMetricsGet`` over the pair:
DRAM bandwidth utilisation, SM active, SM occupancy, tensor active, NVLink
rx/tx.

Unavailable counters are said so with the reason (pre-Hopper, MIG, a VM that
hides them, an old driver, a profiler holding them): a ``gpu.counters`` event
with ``source="unavailable"`` and ``error``, never zeros. Counters that read
0 for several intervals while the GPU is busy are flagged ``stuck``.
Events are emitted at most once a second.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from perftriage.core.analysis import counters as cnt
from perftriage.core.gpus import Peak, peak_bandwidth
from perftriage.core.model.events import GpuCounters, GpuCountersSample
from perftriage.services.sources.base import BaseSource

MIN_INTERVAL_S = 1.0  # recorded at most once a second

# NVML GPM metric ids (nvml.h), in the order GpmReading fields take them.
METRIC_IDS = {
    "dram_busy_pct": 10,  # NVML_GPM_METRIC_DRAM_BW_UTIL
    "sm_active_pct": 2,  # NVML_GPM_METRIC_SM_UTIL
    "sm_occupancy_pct": 3,  # NVML_GPM_METRIC_SM_OCCUPANCY
    "tensor_active_pct": 5,  # NVML_GPM_METRIC_ANY_TENSOR_UTIL
    "nvlink_rx_mibs": 60,  # NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC (MiB/s)
    "nvlink_tx_mibs": 61,  # NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC
}

_NVML_REASONS = {
    "NVMLError_NotSupported": "GPM not supported on this GPU (pre-Hopper, or a VM that hides the counters)",
    "NVMLError_FunctionNotFound": "driver too old for GPM (needs R520 or newer)",
    "NVMLError_InUse": "GPM counters are held by another profiler (DCGM, Nsight)",
    "NVMLError_NoPermission": "GPM counters need more permission (or a profiler holds them)",
    "NVMLError_InsufficientResources": "GPM counters are held by another profiler (DCGM, Nsight)",
    "NVMLError_LibraryNotFound": "no NVIDIA driver (libnvidia-ml not found)",
    "NVMLError_DriverNotLoaded": "no NVIDIA driver loaded",
}


def nvml_reason_name(name: str) -> str:
    """The reason for an NVML error class named ``name`` (as a remote host reports it)."""
    if name == "MIG":
        return "GPM per device is unavailable with MIG enabled"
    return _NVML_REASONS.get(name, f"NVML: {name}")


def nvml_reason(exc: BaseException) -> str:
    """A one-line reason for an NVML error, in the user's terms."""
    for cls in type(exc).__mro__:
        if cls.__name__ in _NVML_REASONS:
            return _NVML_REASONS[cls.__name__]
    return f"NVML: {exc or type(exc).__name__}"


class NvmlGpm:
    """GPM through NVML for every GPU of this machine. ``nvml`` is the
    pynvml module (a fake one in the tests and the benchmark)."""

    def __init__(self, nvml: Any = None) -> None:
        self.error: str | None = None
        self.devices: list[dict] = []
        self.skipped: dict[int, str] = {}  # GPU index -> why it has no counters
        try:
            if nvml is None:
                import pynvml  # noqa: PLC0415 - provided by nvidia-ml-py

                nvml = pynvml
            self.nv = nvml
            nvml.nvmlInit()
            count = nvml.nvmlDeviceGetCount()
        except ImportError:
            self.error = "nvidia-ml-py not installed"
            return
        except Exception as exc:  # NVMLError: no driver
            self.error = nvml_reason(exc)
            return
        for i in range(count):
            self._open(i)
        if not self.devices:
            self.error = (next(iter(self.skipped.values())) if self.skipped
                          else "no NVIDIA GPU (0 devices)")

    def _open(self, index: int) -> None:
        nv = self.nv
        try:
            h = nv.nvmlDeviceGetHandleByIndex(index)
            with contextlib.suppress(Exception):
                if nv.nvmlDeviceGetMigMode(h)[0] == 1:
                    self.skipped[index] = "GPM per device is unavailable with MIG enabled"
                    return
            if not nv.nvmlGpmQueryDeviceSupport(h).isSupportedDevice:
                self.skipped[index] = _NVML_REASONS["NVMLError_NotSupported"]
                return
            samples = [nv.nvmlGpmSampleAlloc(), nv.nvmlGpmSampleAlloc()]
        except Exception as exc:
            self.skipped[index] = nvml_reason(exc)
            return
        name = _try(lambda: _s(nv.nvmlDeviceGetName(h)), "")
        width = _try(lambda: int(nv.nvmlDeviceGetMemoryBusWidth(h)))
        mclk = _try(lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM))
        self.devices.append({"index": index, "handle": h, "name": name, "samples": samples,
                             "primed": False, "peak": peak_bandwidth(name, width, mclk)})

    @property
    def peak_source(self) -> str | None:
        return self.devices[0]["peak"].source if self.devices else None

    def read(self) -> list[GpuCounters]:
        """One interval per GPU since the previous call (the first call primes
        and returns readings with no values)."""
        nv = self.nv
        out = []
        for d in self.devices:
            prev, cur = d["samples"]
            values: dict[str, float | None] = {}
            try:
                nv.nvmlGpmSampleGet(d["handle"], cur)
                if d["primed"]:
                    values = self._metrics(prev, cur)
                d["primed"] = True
            except Exception as exc:
                self.skipped[d["index"]] = nvml_reason(exc)
            d["samples"] = [cur, prev]
            util = _try(lambda: nv.nvmlDeviceGetUtilizationRates(d["handle"]).gpu)  # noqa: B023
            peak: Peak = d["peak"]
            out.append(cnt.make_counters(
                d["index"], name=d["name"], peak_gbs=peak.gbs,
                dram_busy_pct=values.get("dram_busy_pct"), sm_active_pct=values.get("sm_active_pct"),
                sm_occupancy_pct=values.get("sm_occupancy_pct"),
                tensor_active_pct=values.get("tensor_active_pct"),
                nvlink_rx_gbs=cnt.mibs_to_gbs(values.get("nvlink_rx_mibs")),
                nvlink_tx_gbs=cnt.mibs_to_gbs(values.get("nvlink_tx_mibs")),
                util_pct=util))
        return out

    def _metrics(self, s1, s2) -> dict[str, float | None]:
        nv = self.nv
        mg = nv.c_nvmlGpmMetricsGet_t()
        mg.version = nv.NVML_GPM_METRICS_GET_VERSION
        mg.numMetrics = len(METRIC_IDS)
        mg.sample1, mg.sample2 = s1, s2
        for i, mid in enumerate(METRIC_IDS.values()):
            mg.metrics[i].metricId = mid
        nv.nvmlGpmMetricsGet(mg)
        out: dict[str, float | None] = {}
        for i, key in enumerate(METRIC_IDS):
            m = mg.metrics[i]
            ok = getattr(m, "nvmlReturn", 0) == 0
            out[key] = float(m.value) if ok else None
        return out

    def close(self) -> None:
        for d in self.devices:
            for s in d["samples"]:
                with contextlib.suppress(Exception):
                    self.nv.nvmlGpmSampleFree(s)
        self.devices = []


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _try(fn, default=None):
    try:
        return fn()
    except Exception:  # NotSupported and friends: that reading is n/a
        return default


class LocalGpmSource(BaseSource):
    """NVML GPM of this machine, one ``gpu.counters`` event per interval."""

    def __init__(self, host: str, emit: Callable[[GpuCountersSample], object],
                 interval: float = 1.0, nvml: Any = None) -> None:
        super().__init__()
        self.name = f"gpm:{host}"
        self.host: str = host
        self.emit = emit
        self.interval = max(MIN_INTERVAL_S, interval)
        self._nvml = nvml
        self.reader: NvmlGpm | None = None
        self.stuck = cnt.StuckDetector()

    async def run(self) -> None:
        self.reader = reader = await asyncio.to_thread(NvmlGpm, self._nvml)
        if reader.error:
            self.set_state("down", reader.error)
            self.emit(GpuCountersSample(host=self.host, source="unavailable", error=reader.error))
            return
        self.set_state("up")
        reader.read()  # prime: GPM needs a pair of samples
        try:
            while True:
                await asyncio.sleep(self.interval)
                self.emit(self.sample())
        finally:
            reader.close()

    def sample(self) -> GpuCountersSample:
        reader = self.reader
        if reader is None:
            raise RuntimeError(f"{self.name}: sample() before run() opened NVML")
        gpus = [self.stuck.check(c) for c in reader.read()]
        skipped = "; ".join(f"GPU {i}: {why}" for i, why in sorted(reader.skipped.items()))
        return GpuCountersSample(host=self.host, source="nvml-gpm", gpus=gpus,
                                 error=skipped or None, peak_source=reader.peak_source)
