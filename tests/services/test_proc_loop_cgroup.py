"""The remote /proc loops (bash, and python where bash is missing) read the
cgroup's throttled time and its own cpu.pressure beside the system's PSI:
each loop run for real on files of a fake cgroup (the scripts' paths
pointed at a temporary folder), its frames through the sampler's parser."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perftriage.core.parse.proc import ProcFrames, throttled_pct, throttled_time_pct
from perftriage.services.sampling import remote_sampler as rs

CPU_STAT = """usage_usec 5000000
user_usec 4000000
system_usec 1000000
nr_periods {periods}
nr_throttled {throttled}
throttled_usec {throttled_us}
nr_bursts 0
burst_usec 0
"""
PRESSURE = "some avg10={avg10} avg60=40.00 avg300=9.00 total=123\nfull avg10=1.00 avg60=0 avg300=0 total=9\n"


def _cgroup(tmp: Path, periods: int, throttled: int, throttled_us: int | str, avg10: str,
            uptime: str) -> dict[str, str]:
    cg = tmp / "cg"
    cg.mkdir(exist_ok=True)
    (cg / "cpu.stat").write_text(CPU_STAT.format(periods=periods, throttled=throttled,
                                                 throttled_us=throttled_us))
    (cg / "cpu.pressure").write_text(PRESSURE.format(avg10=avg10))
    (tmp / "uptime").write_text(f"{uptime} 99999.00\n")
    return {"/sys/fs/cgroup/": f"{cg}/", "/proc/uptime": str(tmp / "uptime")}


def _frame(script: str, paths: dict[str, str], python: bool) -> list[str]:
    for real, fake in paths.items():
        script = script.replace(real, fake)
    if python:  # one frame of the loop, then out
        script = script.replace("    time.sleep(p)", "    break")
        argv = [sys.executable, "-c", script, "1"]
    else:
        argv = ["bash", "-c", script + "\nframe"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=20, check=True).stdout
    return out.splitlines()


@pytest.mark.parametrize("python", [False, True], ids=["bash", "python"])
def test_each_loop_reads_the_cgroups_throttled_time_and_pressure(tmp_path, python):
    script = rs.PROC_LOOP_PY if python else rs.PROC_FRAME_BASH
    frames = ProcFrames()
    a = frames.feed(_frame(script, _cgroup(tmp_path, 100, 100, 1_000_000, "49.70", "100.00"),
                           python))[0]
    b = frames.feed(_frame(script, _cgroup(tmp_path, 120, 120, 2_600_000, "50.10", "102.00"),
                           python))[0]
    assert (a.cg_psi_some, b.cg_psi_some) == (49.7, 50.1)  # the cgroup's "some", not "full"
    assert (a.cg_throttled_us, b.cg_periods, b.cg_throttled) == (1_000_000, 120, 120)
    assert throttled_pct(a, b) == 100.0  # every period: a share of periods
    if python:  # the python loop stamps its own monotonic clock: ~0 s apart here
        assert a.uptime_s is not None and b.uptime_s is not None and b.uptime_s >= a.uptime_s
    else:
        assert (a.uptime_s, b.uptime_s) == (100.0, 102.0)
        assert throttled_time_pct(a, b) == 80.0  # 1.6 s throttled of 2 s


@pytest.mark.parametrize("python", [False, True], ids=["bash", "python"])
def test_hostile_cgroup_files_are_skipped(tmp_path, python):
    script = rs.PROC_LOOP_PY if python else rs.PROC_FRAME_BASH
    paths = _cgroup(tmp_path, 100, 100, "1e9 $(reboot)", "nan", "-5")
    [f] = ProcFrames().feed(_frame(script, paths, python))
    assert (f.cg_psi_some, f.cg_throttled_us, f.cg_periods) == (None, None, 100)
    if not python:
        assert f.uptime_s is None
