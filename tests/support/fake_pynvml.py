"""A fake ``pynvml`` with N devices and the GPM calls perftriage makes.

The same function names and structure fields as nvidia-ml-py (``c_nvmlGpmMetricsGet_t``
with ``metrics[i].metricId / value / nvmlReturn``, ``nvmlGpmQueryDeviceSupport(h).isSupportedDevice``),
so :class:`perftriage.services.sources.gpm_local.NvmlGpm` runs on it unchanged. It is
used where no GPU is: the unit tests and the cost benchmark (8 devices).

``mode``: ``ok``; ``pre-hopper`` (GPM unsupported); ``mig`` (MIG enabled);
``old-driver`` (the GPM functions are missing); ``in-use`` (another profiler
holds the counters); ``stuck`` (every metric 0 while utilization.gpu is 100);
``no-driver`` (nvmlInit fails). Per device, DRAM utilisation is ``dram[i]``.
"""

from __future__ import annotations

from types import SimpleNamespace

# Standalone on purpose (stdlib only): a probe's host Python imports it with only
# tests/support on its path, so it cannot share the simulator's NVML structures
# (perftriage/simulator/nvml_sim.py) even where they are the same.


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):  # noqa: N801 - pynvml's names
    pass


class NVMLError_FunctionNotFound(NVMLError):  # noqa: N801
    pass


class NVMLError_InUse(NVMLError):  # noqa: N801
    pass


class NVMLError_DriverNotLoaded(NVMLError):  # noqa: N801
    pass


class _Metric:
    __slots__ = ("metricId", "nvmlReturn", "value")

    def __init__(self) -> None:
        self.metricId = 0
        self.value = 0.0
        self.nvmlReturn = 0


class c_nvmlGpmMetricsGet_t:  # noqa: N801
    def __init__(self) -> None:
        self.version = 0
        self.numMetrics = 0
        self.sample1 = None
        self.sample2 = None
        self.metrics = [_Metric() for _ in range(98)]


class FakeNvml:
    NVML_CLOCK_MEM = 2
    NVML_GPM_METRICS_GET_VERSION = 1
    NVMLError = NVMLError
    c_nvmlGpmMetricsGet_t = c_nvmlGpmMetricsGet_t

    def __init__(self, n: int = 8, mode: str = "ok", dram: list[float] | None = None,
                 name: str = "NVIDIA H200", bus_width: int = 6016, mem_clock: int = 3201) -> None:
        self.n = n
        self.mode = mode
        self.dram = dram or [50.0 + i for i in range(n)]
        self.name = name
        self.bus_width = bus_width
        self.mem_clock = mem_clock
        self.calls = 0
        self.freed = 0
        self._tick = 0

    # --- init / devices ---
    def nvmlInit(self) -> None:
        if self.mode == "no-driver":
            raise NVMLError_DriverNotLoaded("Driver Not Loaded")

    def nvmlShutdown(self) -> None:
        pass

    def nvmlDeviceGetCount(self) -> int:
        return self.n

    def nvmlDeviceGetHandleByIndex(self, i: int):
        return SimpleNamespace(index=i)

    def nvmlDeviceGetName(self, h) -> str:
        return self.name

    def nvmlDeviceGetMemoryBusWidth(self, h) -> int:
        return self.bus_width

    def nvmlDeviceGetMaxClockInfo(self, h, kind) -> int:
        return self.mem_clock

    def nvmlDeviceGetMigMode(self, h):
        return [1 if self.mode == "mig" else 0, 0]

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=100, memory=80)

    # --- GPM ---
    def nvmlGpmQueryDeviceSupport(self, h):
        if self.mode == "old-driver":
            raise NVMLError_FunctionNotFound("Function Not Found")
        return SimpleNamespace(isSupportedDevice=0 if self.mode == "pre-hopper" else 1)

    def nvmlGpmSampleAlloc(self):
        if self.mode == "in-use":
            raise NVMLError_InUse("In use by another client")
        return SimpleNamespace(device=None, tick=0)

    def nvmlGpmSampleFree(self, s) -> None:
        self.freed += 1

    def nvmlGpmSampleGet(self, h, s):
        self.calls += 1
        self._tick += 1
        s.device, s.tick = h.index, self._tick
        return s

    def nvmlGpmMetricsGet(self, mg):
        i = mg.sample2.device
        stuck = self.mode == "stuck"
        values = {10: self.dram[i], 2: 90.0, 3: 40.0, 5: 3.0, 60: 1024.0 * i, 61: 1024.0 * i}
        for k in range(mg.numMetrics):
            m = mg.metrics[k]
            m.value = 0.0 if stuck else values.get(m.metricId, 0.0)
            m.nvmlReturn = 0
        return mg
