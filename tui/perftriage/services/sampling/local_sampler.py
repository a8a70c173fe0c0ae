"""Samples this machine: CPU / RAM / load via psutil, GPUs via NVML.

NVML units: memory in bytes, power in milliwatts, clocks in MHz (converted
by :func:`perftriage.core.parse.nvsmi.gpu_from_nvml`). Slow-changing facts (name, UUID,
max clocks, bus width) are read once. With no NVIDIA driver the sample
carries ``gpu_error`` ("no NVIDIA GPU ...") and CPU/RAM still work; with
NVML missing but ``nvidia-smi`` on the PATH, GPUs are read through it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator

import psutil

from perftriage.core.parse import nvsmi
from perftriage.core.parse.proc import ProcFrame, read_contention, throttled_pct, throttled_time_pct
from perftriage.core.model.events import GpuSample, HostSample

MIB = nvsmi.MIB


class _ContentionSource:
    """Where this process reads its CPU contention (PSI, the cgroup's CFS
    counters, its own pressure): the real ``/proc/pressure/cpu``,
    ``/sys/fs/cgroup/cpu.pressure`` and ``/sys/fs/cgroup/cpu.stat``
    unless :func:`contention_source` put another reader in place."""

    def __init__(self) -> None:
        self.read: Callable[[], ProcFrame] = read_contention


_CONTENTION = _ContentionSource()


@contextlib.contextmanager
def contention_source(read: Callable[[], ProcFrame]) -> Iterator[None]:
    """Until the end of the block, :class:`LocalSampler` reads PSI and the
    cgroup's counters from ``read`` instead of the real files: the demo's
    SIMULATED server (``perftriage demo --scenario``, ``simulator.cpu_sim``).
    The reader that was there before comes back."""
    before, _CONTENTION.read = _CONTENTION.read, read
    try:
        yield
    finally:
        _CONTENTION.read = before


class NvmlReader:
    """Thin wrapper around pynvml (package nvidia-ml-py); initialised once."""

    def __init__(self) -> None:
        self.error: str | None = None
        self._nvml = None
        self._handles: list = []
        self._static: list[dict] = []
        self.driver: str | None = None
        self._proc_names: dict[int, str] = {}
        try:
            import pynvml  # provided by nvidia-ml-py

            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            self._nvml = pynvml
            self.driver = _try(lambda: _s(pynvml.nvmlSystemGetDriverVersion()))
            self._static = [_read_static(pynvml, h) for h in self._handles]
            if count == 0:
                self.error = "no NVIDIA GPU (driver loaded, 0 devices)"
        except ImportError:
            self.error = "no NVIDIA GPU (nvidia-ml-py not installed)"
        except Exception as exc:  # pynvml.NVMLError and friends: no usable driver
            self.error = f"no NVIDIA GPU ({_nvml_reason(exc)})"

    @property
    def available(self) -> bool:
        return self._nvml is not None and bool(self._handles)

    def _throttle(self, h) -> list[str]:
        nv = self._nvml
        fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nv, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        return nvsmi.throttle_names(_try(lambda: fn(h))) if fn else []

    def _processes(self, h) -> list[tuple[int, str, int | None]]:
        nv = self._nvml
        fn = getattr(nv, "nvmlDeviceGetComputeRunningProcesses", None) or getattr(
            nv, "nvmlDeviceGetComputeProcesses", None)  # the name NVML uses; older alias
        procs = (_try(lambda: fn(h), []) or []) if fn else []
        out = []
        for p in procs:
            used = getattr(p, "usedGpuMemory", None)
            out.append((int(p.pid), self._proc_name(int(p.pid)), used if isinstance(used, int) else None))
        return out

    def _proc_name(self, pid: int) -> str:
        name = self._proc_names.get(pid)
        if name is None:
            try:
                name = psutil.Process(pid).name()
            except (psutil.Error, OSError):
                name = "?"  # another container's pid namespace, or gone
            if len(self._proc_names) > 1024:
                self._proc_names.clear()
            self._proc_names[pid] = name
        return name

    def read(self) -> list[GpuSample]:
        nv = self._nvml
        if nv is None or not self._handles:  # not self.available, spelled so that nv is narrowed
            return []
        gpus = []
        for index, (h, st) in enumerate(zip(self._handles, self._static, strict=True)):
            util = _try(lambda: nv.nvmlDeviceGetUtilizationRates(h))
            mem = _try(lambda: nv.nvmlDeviceGetMemoryInfo(h))
            gpus.append(nvsmi.gpu_from_nvml(
                index,
                name=st["name"],
                uuid=st["uuid"],
                util_gpu=util.gpu if util is not None else None,
                util_mem=util.memory if util is not None else None,
                mem_used_bytes=mem.used if mem is not None else None,
                mem_total_bytes=mem.total if mem is not None else None,
                power_mw=_try(lambda: nv.nvmlDeviceGetPowerUsage(h)),
                power_limit_mw=_try(lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h)),
                temp_c=_try(lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
                sm_clock=_try(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
                mem_clock=_try(lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
                sm_clock_max=st["sm_clock_max"],
                mem_clock_max=st["mem_clock_max"],
                pstate=_try(lambda: int(nv.nvmlDeviceGetPerformanceState(h))),
                bus_width_bits=st["bus_width_bits"],
                throttle=self._throttle(h),
                processes=self._processes(h),
            ))
        return gpus


class SmiReader:
    """Fallback when NVML is unusable but ``nvidia-smi`` is on the PATH: one
    short ``nvidia-smi --query-gpu`` per sample (local, ~30 ms)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.error: str | None = None
        self.fields = nvsmi.QueryFields()  # minus what this nvidia-smi refuses

    def read(self) -> list[GpuSample]:
        argv = [self.path, f"--query-gpu={','.join(self.fields.fields)}",
                "--format=csv,noheader,nounits"]
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=5, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.error = f"nvidia-smi: {exc}"
            return []
        gpus = nvsmi.parse_query_csv(res.stdout, self.fields.fields)
        if not gpus and self.fields.drop_refused(res.stdout.splitlines()):
            return self.read()  # a refused field blanks every GPU: once more without it
        if not gpus:
            first = (res.stdout.strip() or res.stderr.strip()).splitlines()[:1]
            self.error = f"no NVIDIA GPU (nvidia-smi: {first[0] if first else f'exit {res.returncode}'})"
        else:
            self.error = self.fields.note
        return gpus


def _read_static(nv, h) -> dict:
    """The slow-changing facts of one GPU, read once through the module ``nv``."""
    return {
        "name": _try(lambda: _s(nv.nvmlDeviceGetName(h)), ""),
        "uuid": _try(lambda: _s(nv.nvmlDeviceGetUUID(h)), ""),
        "sm_clock_max": _try(lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)),
        "mem_clock_max": _try(lambda: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM)),
        "bus_width_bits": _try(lambda: int(nv.nvmlDeviceGetMemoryBusWidth(h))),
    }


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _try(fn, default=None):
    try:
        return fn()
    except Exception:  # NVMLError_NotSupported etc.: the field is n/a
        return default


def _nvml_reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return f"NVML: {text}"


def busy_pct(before, after) -> float:
    """Per-CPU busy share between two ``psutil.cpu_times`` readings, as
    psutil computes it (busy = all but idle and iowait; guest time is already
    in user); 0.0 when no time passed."""
    def total(t) -> float:
        return sum(t) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)

    def idle(t) -> float:
        return t.idle + getattr(t, "iowait", 0.0)

    elapsed = total(after) - total(before)
    if elapsed <= 0:
        return 0.0
    busy = elapsed - (idle(after) - idle(before))
    return round(min(100.0, max(0.0, busy / elapsed * 100.0)), 1)


class LocalSampler:
    def __init__(self, host: str = "localhost") -> None:
        self.host = host
        self.nvml = NvmlReader()
        self.smi: SmiReader | None = None
        if not self.nvml.available and (path := shutil.which("nvidia-smi")):
            self.smi = SmiReader(path)
        # this sampler's own baseline: psutil.cpu_percent() keeps ONE baseline
        # per process, so another reader in between (the GPM snapshot beside
        # `status`) left a window of ~0 s and a 0.0 % reading
        self._cpu_times = psutil.cpu_times(percpu=True)
        self._contention = _CONTENTION.read()

    def info(self) -> dict:
        """Slow-changing facts for a HostInfo event (bandwidth for the roofline)."""
        if not self.nvml.available:
            return {"gpu_source": "nvidia-smi" if self.smi else None}
        gpus = self.nvml.read()
        return {
            "gpu_source": "nvml",
            "driver": self.nvml.driver,
            "bandwidth_gbs": {str(g.index): g.bandwidth_gbs for g in gpus},
            "bandwidth_gbs_total": round(sum(g.bandwidth_gbs or 0 for g in gpus), 1) or None,
            "bus_width_bits": {str(g.index): g.bus_width_bits for g in gpus},
        }

    def read_gpus(self) -> tuple[list[GpuSample], str | None]:
        if self.nvml.available:
            return self.nvml.read(), None
        if self.smi is not None:
            gpus = self.smi.read()
            return gpus, self.smi.error
        return [], self.nvml.error

    def sample(self) -> HostSample:
        now = psutil.cpu_times(percpu=True)
        per_cpu = [busy_pct(a, b) for a, b in zip(self._cpu_times, now, strict=False)]
        self._cpu_times = now
        vm = psutil.virtual_memory()
        load1, load5, load15 = os.getloadavg()
        gpus, gpu_error = self.read_gpus()
        contention, before = _CONTENTION.read(), self._contention
        self._contention = contention
        return HostSample(
            host=self.host,
            cpu_pct=round(sum(per_cpu) / len(per_cpu), 1) if per_cpu else None,
            per_cpu_pct=[float(x) for x in per_cpu],
            mem_used_bytes=int(vm.total - vm.available),
            mem_total_bytes=int(vm.total),
            load1=load1,
            load5=load5,
            load15=load15,
            cpu_psi_some=contention.psi_some,
            cpu_throttled_pct=throttled_pct(before, contention),
            cpu_psi_some_cgroup=contention.cg_psi_some,
            cpu_throttled_time_pct=throttled_time_pct(before, contention),
            gpus=gpus,
            gpu_error=gpu_error,  # with GPUs: only which fields nvidia-smi refused
        )
