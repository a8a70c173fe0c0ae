"""The /proc loop's output (``@@proc`` … ``@@end`` frames of /proc/stat cpu
lines, the head of /proc/meminfo and /proc/loadavg) and CPU busy shares."""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

KIB = 1024


@dataclass
class ProcFrame:
    cpu: list[int] | None = None  # the aggregate "cpu" jiffies
    per_cpu: list[list[int]] = field(default_factory=list)
    mem_total: int | None = None  # bytes
    mem_available: int | None = None
    mem_free: int | None = None
    load: tuple[float, float, float] | None = None
    # PSI ``/proc/pressure/cpu`` "some avg10" (% of time some task waited for a CPU)
    psi_some: float | None = None
    # cgroup v2 ``cpu.stat``: CFS periods and how many of them were throttled
    cg_periods: int | None = None
    cg_throttled: int | None = None
    # ... and the time its runqueues spent throttled (µs, ``throttled_usec``)
    cg_throttled_us: int | None = None
    # the cgroup's own ``cpu.pressure`` "some avg10" (%): its tasks' wait only
    cg_psi_some: float | None = None
    # when the frame was read (s, /proc/uptime remotely): the wall time between two
    uptime_s: float | None = None


MEM_KEYS = {"MemTotal:": "mem_total", "MemAvailable:": "mem_available", "MemFree:": "mem_free"}


def parse_proc_frame(lines: list[str]) -> ProcFrame:
    f = ProcFrame()
    for line in lines:
        parts = line.split()
        if not parts:
            continue
        key = parts[0]
        # a host's text is read as ASCII digits only ("²".isdigit() is True,
        # int("²") raises): a bad field is left out, never a traceback
        if key == "cpu":
            f.cpu = [n for x in parts[1:] if (n := _count(x)) is not None]
        elif key.startswith("cpu") and key[3:].isdigit():
            f.per_cpu.append([n for x in parts[1:] if (n := _count(x)) is not None])
        elif key in MEM_KEYS and len(parts) >= 2 and (n := _count(parts[1])) is not None:
            setattr(f, MEM_KEYS[key], n * KIB)
        elif key == "psi" and len(parts) >= 3 and parts[1] == "some":
            f.psi_some = psi_avg10(parts[2:])
        elif key == "cgpsi" and len(parts) >= 3 and parts[1] == "some":
            f.cg_psi_some = psi_avg10(parts[2:])
        elif key == "cg" and len(parts) == 3 and (n := _count(parts[2])) is not None:
            if parts[1] == "nr_periods":
                f.cg_periods = n
            elif parts[1] == "nr_throttled":
                f.cg_throttled = n
            elif parts[1] == "throttled_usec":
                f.cg_throttled_us = n
        elif key == "uptime" and len(parts) >= 2:
            f.uptime_s = _seconds(parts[1])
        elif key == "loadavg" and len(parts) >= 4:
            with contextlib.suppress(ValueError):
                f.load = (float(parts[1]), float(parts[2]), float(parts[3]))
    return f


def psi_avg10(fields: list[str]) -> float | None:
    """``avg10=1.23`` among PSI's fields -> 1.23 (None: absent or not a share)."""
    for part in fields:
        if part.startswith("avg10="):
            with contextlib.suppress(ValueError):
                v = float(part[6:])
                return v if 0.0 <= v <= 100.0 else None
    return None


def _count(text: str) -> int | None:
    """A counter of cpu.stat: ASCII digits, at most 20 (a u64); else None."""
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 20 else None


def _seconds(text: str) -> float | None:
    with contextlib.suppress(ValueError):
        v = float(text)
        return v if 0.0 <= v < 1e12 else None  # also drops nan and inf
    return None


def throttled_pct(prev: ProcFrame | None, cur: ProcFrame) -> float | None:
    """The share of CFS periods the cgroup was throttled in, between two frames."""
    if (prev is None or prev.cg_periods is None or prev.cg_throttled is None
            or cur.cg_periods is None or cur.cg_throttled is None):
        return None
    periods = cur.cg_periods - prev.cg_periods
    throttled = cur.cg_throttled - prev.cg_throttled
    if periods <= 0 or throttled < 0:
        return None
    return round(min(100.0, 100.0 * throttled / periods), 1)


def throttled_time_pct(prev: ProcFrame | None, cur: ProcFrame) -> float | None:
    """The share of wall time the cgroup was throttled between two frames:
    the growth of ``throttled_usec`` over the growth of the frames' clock, in
    %, clamped to [0, 100] (the kernel adds each CPU's throttled runqueue, so
    a cgroup throttled on several CPUs at once can count more than the wall).
    None where no CFS period ran between them (no quota: the counter stays 0
    however contended the CPUs are, which is PSI's to say)."""
    if (prev is None or prev.cg_throttled_us is None or prev.uptime_s is None
            or cur.cg_throttled_us is None or cur.uptime_s is None):
        return None
    if (prev.cg_periods is not None and cur.cg_periods is not None
            and cur.cg_periods <= prev.cg_periods):
        return None  # no CFS period ran: no quota in force (cpu.max "max"), nothing to say
    wall_us = (cur.uptime_s - prev.uptime_s) * 1e6
    throttled = cur.cg_throttled_us - prev.cg_throttled_us
    if wall_us <= 0 or throttled < 0:
        return None
    return round(max(0.0, min(100.0, 100.0 * throttled / wall_us)), 1)


CG_STAT_KEYS = ("nr_periods", "nr_throttled", "throttled_usec")


def read_contention(pressure: str = "/proc/pressure/cpu",
                    cpu_stat: str = "/sys/fs/cgroup/cpu.stat",
                    cg_pressure: str = "/sys/fs/cgroup/cpu.pressure") -> ProcFrame:
    """This machine's PSI and cgroup lines, as the remote loop prints them
    (a file that is not there, not readable: left out), stamped with the
    monotonic clock."""
    lines = []
    with contextlib.suppress(OSError):
        with open(pressure) as f:
            lines.append("psi " + f.readline().strip())
    with contextlib.suppress(OSError):
        with open(cg_pressure) as f:
            lines.append("cgpsi " + f.readline().strip())
    with contextlib.suppress(OSError):
        with open(cpu_stat) as f:
            lines += ["cg " + ln.strip() for ln in f if ln.startswith(CG_STAT_KEYS)]
    frame = parse_proc_frame(lines)
    frame.uptime_s = time.monotonic()
    return frame


def cpu_pct(prev: list[int] | None, cur: list[int] | None) -> float | None:
    """Busy share between two /proc/stat cpu lines (idle + iowait are idle)."""
    if not prev or not cur or len(prev) < 4 or len(cur) < 4:
        return None
    total = sum(cur) - sum(prev)
    idle = (cur[3] + (cur[4] if len(cur) > 4 else 0)) - (prev[3] + (prev[4] if len(prev) > 4 else 0))
    if total <= 0:
        return None
    return round(max(0.0, min(100.0, 100.0 * (total - idle) / total)), 1)


class ProcFrames:
    """Feeds lines of the /proc loop, yields complete frames."""

    def __init__(self) -> None:
        self._buf: list[str] | None = None

    def feed(self, lines: list[str]) -> list[ProcFrame]:
        out = []
        for line in lines:
            if line == "@@proc":
                self._buf = []
            elif line == "@@end":
                if self._buf is not None:
                    out.append(parse_proc_frame(self._buf))
                self._buf = None
            elif self._buf is not None:
                self._buf.append(line)
        return out
