"""Per-GPU bandwidth counters (NVML GPM) as a Source: local through NVML,
remote through one long-lived ``nvidia-smi dmon --gpm-metrics`` per host.

Local: ``nvmlGpmQueryDeviceSupport`` once per GPU, then one GPM sample per GPU
per interval (two buffers, swapped) and ``nvmlGpmMetricsGet`` over the pair:
DRAM bandwidth utilisation, SM active, SM occupancy, tensor active, NVLink
rx/tx. Remote: the dmon stream is read by :class:`perftriage.core.parse.dmon.DmonStream`;
after its start no process is spawned per sample.

Unavailable counters are said so with the reason (pre-Hopper, MIG, a VM that
hides them, an old driver, a profiler holding them): a ``gpu.counters`` event
with ``source="unavailable"`` and ``error``, never zeros. Counters that read
0 for several intervals while the GPU is busy are flagged ``stuck``.
Events are emitted at most once a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from perftriage.core.analysis import counters as cnt
from perftriage.core.analysis.gpus import Peak, peak_bandwidth
from perftriage.core.model.events import Event, GpuCounters, GpuCountersSample
from perftriage.core.parse import dmon
from perftriage.core.sanitize import visible
from perftriage.services.source import BaseSource
from perftriage.transport.base import Transport, TransportError

log = logging.getLogger(__name__)

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
                import pynvml as nvml  # noqa: PLC0415 - provided by nvidia-ml-py
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

    def __init__(self, host: str, emit: Callable[[Event], object], interval: float = 1.0,
                 nvml: Any = None) -> None:
        super().__init__()
        self.name, self.host = f"gpm:{host}", host
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
        gpus = [self.stuck.check(c) for c in self.reader.read()]
        skipped = "; ".join(f"GPU {i}: {why}" for i, why in sorted(self.reader.skipped.items()))
        return GpuCountersSample(host=self.host, source="nvml-gpm", gpus=gpus,
                                 error=skipped or None, peak_source=self.reader.peak_source)


PeakLookup = Callable[[int], tuple[str, Peak]]


def table_peaks(names: dict[int, str], nvml_gbs: dict[str, float | None] | None = None) -> PeakLookup:
    """Peak per GPU index: the host's NVML figure when known, else the table."""
    def lookup(index: int) -> tuple[str, Peak]:
        name = names.get(index, "")
        return name, peak_bandwidth(name, measured_gbs=(nvml_gbs or {}).get(str(index)))
    return lookup


class DmonSource(BaseSource):
    """One ``nvidia-smi dmon --gpm-metrics 10,2,3,5 -d 1`` on a host, for ever:
    restarted with back-off when it exits; a complete sample (a row per GPU)
    becomes one ``gpu.counters`` event."""

    def __init__(self, host: str, transport: Transport, emit: Callable[[Event], object],
                 peaks: PeakLookup, *, backoff_max_s: float = 30.0,
                 stall_s: float = 15.0, min_interval_s: float = MIN_INTERVAL_S) -> None:
        super().__init__()
        self.name, self.host = f"gpm:{host}", host
        self.transport = transport
        self.emit = emit
        self._peaks = peaks
        self.backoff_max_s = backoff_max_s
        self.stall_s = stall_s
        self.starts = 0
        self.stuck = cnt.StuckDetector()
        self._last_emit = 0.0
        self.min_interval_s = min_interval_s

    async def run(self) -> None:
        backoff = 1.0
        while True:
            self.starts += 1
            reason = await self._stream_once()
            unavailable = dmon.unavailable_reason([reason]) if reason else None
            if unavailable:
                self.set_state("down", unavailable)
                self.emit(GpuCountersSample(host=self.host, source="unavailable", error=unavailable))
                backoff = max(backoff, 60.0)  # it will not come back soon: ask rarely
            else:
                self.set_state("retrying", f"nvidia-smi dmon {reason}")
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, max(self.backoff_max_s, backoff))

    async def _stream_once(self) -> str:
        stream = self.transport.stream_batches(dmon.dmon_command() + " 2>&1")
        parser = dmon.DmonStream()
        got = 0
        try:
            while True:
                try:
                    batch = await asyncio.wait_for(anext(stream), self.stall_s if got else 30.0)
                except StopAsyncIteration:
                    return _why(parser, got, "exited")
                except TimeoutError:
                    return "stalled"
                got += len(batch)
                for sample in parser.feed(batch):
                    self._on_sample(sample)
        except TransportError as exc:
            return exc.reason
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()  # kills the remote dmon

    def _on_sample(self, sample: list[dmon.GpmReading]) -> None:
        if not any(r.has_gpm for r in sample):
            return  # dmon's first two intervals: '-' while GPM primes
        now = time.monotonic()
        if now - self._last_emit < self.min_interval_s * 0.9:
            return
        self._last_emit = now
        gpus, source = [], None
        for r in sample:
            name, peak = self._peaks(r.index)
            source = source or peak.source
            gpus.append(self.stuck.check(cnt.make_counters(
                r.index, name=name, peak_gbs=peak.gbs, dram_busy_pct=r.dram_busy_pct,
                sm_active_pct=r.sm_active_pct, sm_occupancy_pct=r.sm_occupancy_pct,
                tensor_active_pct=r.tensor_active_pct,
                nvlink_rx_gbs=cnt.mibs_to_gbs(r.nvlink_rx_mibs),
                nvlink_tx_gbs=cnt.mibs_to_gbs(r.nvlink_tx_mibs), util_pct=r.util_pct)))
        self.set_state("up")
        self.emit(GpuCountersSample(host=self.host, source="nvidia-smi-dmon", gpus=gpus,
                                    peak_source=source))


def _why(parser: dmon.DmonStream, got: int, default: str) -> str:
    if parser.errors:  # remote text: made visible-safe before it is shown or recorded
        return dmon.unavailable_reason(parser.errors) or visible(parser.errors[-1])[:200]
    return default if got else "gave no output"

