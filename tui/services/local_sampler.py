"""Samples this machine: CPU / RAM / load via psutil, GPUs via NVML.

NVML units: memory in bytes, power in milliwatts, clocks in MHz. With no
NVIDIA driver the sample carries ``gpu_error`` ("no NVIDIA GPU ...") and
CPU/RAM still work.
"""

from __future__ import annotations

import os

import psutil

from tui.core.events import GpuSample, HostSample

MIB = 1024 * 1024


class NvmlReader:
    """Thin wrapper around pynvml (package nvidia-ml-py); initialised once."""

    def __init__(self) -> None:
        self.error: str | None = None
        self._nvml = None
        self._handles: list = []
        try:
            import pynvml  # provided by nvidia-ml-py

            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            self._nvml = pynvml
            if count == 0:
                self.error = "no NVIDIA GPU (driver loaded, 0 devices)"
        except ImportError:
            self.error = "no NVIDIA GPU (nvidia-ml-py not installed)"
        except Exception as exc:  # pynvml.NVMLError and friends
            self.error = f"no NVIDIA GPU ({_nvml_reason(exc)})"

    @property
    def available(self) -> bool:
        return self._nvml is not None and bool(self._handles)

    def read(self) -> list[GpuSample]:
        if not self.available:
            return []
        nv = self._nvml
        gpus = []
        for index, h in enumerate(self._handles):
            g = GpuSample(index=index)
            g.name = _try(lambda: _s(nv.nvmlDeviceGetName(h)), "")
            g.uuid = _try(lambda: _s(nv.nvmlDeviceGetUUID(h)), "")
            util = _try(lambda: nv.nvmlDeviceGetUtilizationRates(h))
            if util is not None:
                g.util_pct, g.mem_util_pct = float(util.gpu), float(util.memory)
            mem = _try(lambda: nv.nvmlDeviceGetMemoryInfo(h))
            if mem is not None:
                g.mem_used_mib, g.mem_total_mib = mem.used / MIB, mem.total / MIB
            power = _try(lambda: nv.nvmlDeviceGetPowerUsage(h))
            g.power_w = power / 1000.0 if power is not None else None
            limit = _try(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h))
            g.power_limit_w = limit / 1000.0 if limit is not None else None
            temp = _try(lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))
            g.temp_c = float(temp) if temp is not None else None
            g.sm_clock_mhz = _f(_try(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)))
            g.mem_clock_mhz = _f(_try(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)))
            gpus.append(g)
        return gpus


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _f(v) -> float | None:
    return float(v) if v is not None else None


def _try(fn, default=None):
    try:
        return fn()
    except Exception:  # NVMLError_NotSupported etc.: the field is n/a
        return default


def _nvml_reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return f"NVML: {text}"


class LocalSampler:
    def __init__(self, host: str = "localhost") -> None:
        self.host = host
        self.nvml = NvmlReader()
        psutil.cpu_percent(percpu=True)  # prime: the first call always reads 0

    def sample(self) -> HostSample:
        per_cpu = psutil.cpu_percent(percpu=True)
        vm = psutil.virtual_memory()
        load1, load5, load15 = os.getloadavg()
        return HostSample(
            host=self.host,
            cpu_pct=round(sum(per_cpu) / len(per_cpu), 1) if per_cpu else None,
            per_cpu_pct=[float(x) for x in per_cpu],
            mem_used_bytes=int(vm.total - vm.available),
            mem_total_bytes=int(vm.total),
            load1=load1,
            load5=load5,
            load15=load15,
            gpus=self.nvml.read(),
            gpu_error=None if self.nvml.available else self.nvml.error,
        )
