"""Local sampler NVML path with a fake pynvml (values from the H200 capture
tests/fixtures/nvidia-smi/h200/pynvml.txt): units and the process call."""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace

import pytest

from perftriage.services.sampling import local_sampler


def fake_pynvml():
    m = types.ModuleType("pynvml")
    m.NVML_CLOCK_SM, m.NVML_CLOCK_MEM, m.NVML_TEMPERATURE_GPU = 1, 2, 0
    m.nvmlInit = lambda: None
    m.nvmlDeviceGetCount = lambda: 1
    m.nvmlDeviceGetHandleByIndex = lambda i: f"h{i}"
    m.nvmlSystemGetDriverVersion = lambda: "580.159.04"
    m.nvmlDeviceGetName = lambda h: b"NVIDIA H200"
    m.nvmlDeviceGetUUID = lambda h: "GPU-123e22a3-2673-11b7-d255-7482f2465817"
    m.nvmlDeviceGetUtilizationRates = lambda h: SimpleNamespace(gpu=100, memory=23)
    m.nvmlDeviceGetMemoryInfo = lambda h: SimpleNamespace(used=33917108224, total=150754820096)
    m.nvmlDeviceGetPowerUsage = lambda h: 690620
    m.nvmlDeviceGetEnforcedPowerLimit = lambda h: 700000
    m.nvmlDeviceGetTemperature = lambda h, s: 63
    m.nvmlDeviceGetClockInfo = lambda h, c: {1: 1470, 2: 3201}[c]
    m.nvmlDeviceGetMaxClockInfo = lambda h, c: {1: 1980, 2: 3201}[c]
    m.nvmlDeviceGetMemoryBusWidth = lambda h: 6016
    m.nvmlDeviceGetPerformanceState = lambda h: 0
    m.nvmlDeviceGetCurrentClocksEventReasons = lambda h: 0x4

    def power_not_supported(h):
        raise RuntimeError("Not Supported")

    m.nvmlDeviceGetComputeRunningProcesses = lambda h: [
        SimpleNamespace(pid=430, usedGpuMemory=33262927872)]
    return m, power_not_supported


def test_nvml_units_and_processes(monkeypatch):
    m, _ = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", m)
    s = local_sampler.LocalSampler("localhost")
    assert s.nvml.available
    sample = s.sample()
    [g] = sample.gpus
    assert g.name == "NVIDIA H200" and g.power_w == pytest.approx(690.62)
    assert g.power_limit_w == 700.0 and g.mem_total_mib == pytest.approx(143771, abs=1)
    assert g.sm_clock_max_mhz == 1980.0 and g.mem_clock_max_mhz == 3201.0 and g.pstate == "P0"
    assert g.throttle == ["sw_power_cap"] and g.bandwidth_gbs == pytest.approx(4814.4, abs=0.1)
    assert [(p.pid, round(p.used_mib)) for p in g.processes] == [(430, 31722)]
    assert sample.gpu_error is None and sample.mem_total_bytes > 0
    info = s.info()
    assert info["bandwidth_gbs_total"] == pytest.approx(4814.4, abs=0.1)


def test_unsupported_field_is_none(monkeypatch):
    m, broken = fake_pynvml()
    m.nvmlDeviceGetPowerUsage = broken
    monkeypatch.setitem(sys.modules, "pynvml", m)
    [g] = local_sampler.LocalSampler("localhost").sample().gpus
    assert g.power_w is None and g.util_pct == 100.0


def test_no_driver_keeps_cpu(monkeypatch):
    m, broken = fake_pynvml()
    m.nvmlInit = lambda: broken(None)
    monkeypatch.setitem(sys.modules, "pynvml", m)
    monkeypatch.setattr(local_sampler.shutil, "which", lambda name: None)
    s = local_sampler.LocalSampler("localhost").sample()
    assert s.gpus == [] and s.gpu_error.startswith("no NVIDIA GPU") and s.cpu_pct is not None


def test_two_samplers_keep_their_own_cpu_window() -> None:
    """`status` reads GPM counters beside its sample: a second reader in the
    same process must not leave the first a window of ~0 s (read as 0.0 %)."""
    import time

    from perftriage.services.sampling.local_sampler import LocalSampler

    first, second = LocalSampler(), LocalSampler()
    end = time.process_time() + 0.3
    while time.process_time() < end:  # this process keeps one CPU busy
        pass
    second.sample()
    assert (first.sample().cpu_pct or 0) > 0


def test_busy_pct_as_psutil_counts_it() -> None:
    from collections import namedtuple

    from perftriage.services.sampling.local_sampler import busy_pct

    T = namedtuple("T", "user nice system idle iowait irq softirq steal guest guest_nice")
    a = T(10, 0, 5, 100, 5, 0, 0, 0, 2, 0)
    b = T(16, 0, 7, 101, 6, 0, 0, 0, 4, 0)  # 8 busy, 2 idle/iowait; guest is inside user
    assert busy_pct(a, b) == 80.0
    assert busy_pct(a, a) == 0.0
