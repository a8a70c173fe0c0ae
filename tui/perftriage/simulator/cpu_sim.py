"""SIMULATED CPU contention for the demo's scenarios: the simulated SGLang
server says what its host's PSI and its cgroup's CFS counters would read
(``GET /simulated/cpu`` on its port, from the scenario's state), and
:class:`SimulatedContention` answers the local sampler's read of
``/proc/pressure/cpu``, ``/sys/fs/cgroup/cpu.pressure`` and
``/sys/fs/cgroup/cpu.stat`` with those readings.

``perftriage demo`` puts a :class:`SimulatedContention` in place of the
real files for its own process while it runs
(``services.sampling.local_sampler.contention_source``), with or without a
scenario: the cpu-throttle scenario's server reads throttled, the others'
(and the server without a scenario) read zero, so a busy machine running the
demo (a shared CI box) adds no cpu-throttle of its own to its story. Nothing
else reads them: ``perftriage`` on a real host reads the real files.

The server's reply is remote text: each value is taken only as a number in
its range (a share 0-100, a counter a whole number >= 0), anything else is
left out, as a file that is not there is.
"""

from __future__ import annotations

import json
import math
import os
import random
import urllib.request
from typing import Any

from perftriage.core.parse.proc import ProcFrame
from perftriage.simulator.scenarios import Scenario

CFS_PERIOD_S = 0.1  # the kernel's default cpu.cfs_period_us (100 ms)
MAX_REPLY = 64 * 1024
MAX_COUNT = 2**63 - 1


def cpu_readings(sc: Scenario, elapsed_s: float, rng: random.Random) -> dict[str, Any]:
    """What the scenario's host reads ``elapsed_s`` after the server started
    (the server's ``/simulated/cpu``): PSI cpu some avg10 about the planted
    share; cpu.stat's counters growing one CFS period a 100 ms, the planted
    share of them throttled, ``throttled_usec`` the planted share of the wall
    time (``uptime_s``, the clock it is read against); the cgroup's own
    cpu.pressure about that share (its tasks wait while it is throttled: on
    a real H200 under 0.2 CPU, 78.6 % against 79.7 % throttled)."""
    periods = max(0, int(elapsed_s / CFS_PERIOD_S))
    throttled = int(periods * sc.cfs_throttled / 100.0)
    share = sc.cfs_throttled_time / 100.0 if throttled else 0.0
    return {"simulated": True, "scenario": sc.name, "pid": os.getpid(),
            "psi_some_avg10": _about(sc.cpu_psi, rng), "nr_periods": periods,
            "nr_throttled": throttled, "throttled_usec": int(max(0.0, elapsed_s) * 1e6 * share),
            "cg_psi_some_avg10": _about(sc.cfs_throttled_time, rng),
            "uptime_s": round(max(0.0, elapsed_s), 6)}


def _about(share: float, rng: random.Random) -> float:
    """A PSI avg10 about ``share`` (± 2 points; 0 stays 0)."""
    return round(min(100.0, max(0.0, share + rng.uniform(-2.0, 2.0))), 2) if share else 0.0


def _share(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    v = float(v)
    return v if math.isfinite(v) and 0.0 <= v <= 100.0 else None


def _count(v: object) -> int | None:
    if isinstance(v, bool) or not isinstance(v, int):
        return None
    return v if 0 <= v <= MAX_COUNT else None


def _clock(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    v = float(v)
    return v if math.isfinite(v) and 0.0 <= v < 1e12 else None


def contention_frame(doc: object) -> ProcFrame:
    """The server's reply as the sampler's frame (what ``read_contention``
    gives from the real files); a value that is not a number in its range
    is left out, and the cgroup counters go together or not at all."""
    f = ProcFrame()
    if not isinstance(doc, dict):
        return f
    f.psi_some = _share(doc.get("psi_some_avg10"))
    f.cg_psi_some = _share(doc.get("cg_psi_some_avg10"))
    periods, throttled = _count(doc.get("nr_periods")), _count(doc.get("nr_throttled"))
    if periods is not None and throttled is not None and throttled <= periods:
        f.cg_periods, f.cg_throttled = periods, throttled
        f.cg_throttled_us = _count(doc.get("throttled_usec"))
        f.uptime_s = _clock(doc.get("uptime_s"))
    return f


class SimulatedContention:
    """The local sampler's PSI / cgroup read, answered from the simulated
    server's ``/simulated/cpu`` (``url``). Before the server answers (its
    start-up, a restart) it reads as no file: nothing."""

    def __init__(self, url: str) -> None:
        self.url = url

    def __call__(self) -> ProcFrame:
        try:
            with urllib.request.urlopen(self.url, timeout=1.0) as resp:  # noqa: S310
                body = resp.read(MAX_REPLY + 1)
            if len(body) > MAX_REPLY:
                return ProcFrame()
            doc = json.loads(body)
        except (OSError, ValueError, RecursionError):
            return ProcFrame()
        return contention_frame(doc)
