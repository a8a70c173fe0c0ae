"""What the triage reads for one host over one window of session time: the
medians of the live series, and the freshest capture, stacks and ncu result
taken inside the window — never one from before it (a restart, a change
point): evidence of a server that no longer exists is history.

Built from a :class:`~perftriage.core.compare.recording.Recording`, which
both a transcript (``perftriage triage``, the report) and the live cockpit
(the baseline's live recording) feed event by event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Any

from perftriage.core.compare.readings import WITNESSED
from perftriage.core.compare.recording import Recording
from perftriage.core.model import events as ev
import msgspec

from perftriage.core.profile.model import ProfileSummary
from perftriage.core.profile.ncu import NcuSummary
from perftriage.core.stacks.summary import StacksSummary, from_detail


@dataclass(frozen=True)
class Stamped:
    t: float
    source: str  # the capture or probe id
    value: Any


@dataclass
class Witnesses:
    host: str
    start: float
    end: float
    # per-second medians over the window (None: no reading)
    gap: float | None = None
    traffic_ratio: float | None = None
    dram_idle_pct: float | None = None  # DRAM idle (the gap's idle_pct): not GPU idle
    gpu_util_pct: float | None = None  # NVML: share of time a kernel ran
    gpu_mem_pct: float | None = None  # NVML: memory used of the total, the fullest GPU, %
    decode_tps: float | None = None
    running: float | None = None
    queued: float | None = None
    token_usage: float | None = None  # KV cache usage 0-1: the log's, else the engine's
    full_kv_share: float | None = None  # share of readings at token usage >= 0.95
    retractions: int = 0
    cpu_pct: float | None = None
    cpu_psi_some: float | None = None  # PSI cpu some avg10, %
    cpu_throttled_pct: float | None = None  # CFS periods throttled, %
    cpu_psi_some_cgroup: float | None = None  # the cgroup's own cpu.pressure some avg10, %
    cpu_throttled_time_pct: float | None = None  # wall time the cgroup was throttled, %
    # throttled readings: (share of the GPU readings, reasons seen)
    throttled_share: float | None = None
    throttle_reasons: tuple[str, ...] = ()
    throttle_clock: float | None = None  # mean SM clock / its max while slowed
    capture: Stamped | None = None  # value: ProfileSummary
    stacks: Stamped | None = None  # value: StacksSummary
    ncu: Stamped | None = None  # value: NcuSummary
    history: list[str] = field(default_factory=list)  # evidence left out, and why

    @property
    def minutes(self) -> float:
        return max(self.end - self.start, 1.0) / 60.0

    @property
    def profile(self) -> ProfileSummary | None:
        return self.capture.value if self.capture else None

    @property
    def host_stacks(self) -> StacksSummary | None:
        return self.stacks.value if self.stacks else None


def _median(rec: Recording, metric: str, host: str, start: float, end: float) -> float | None:
    series = rec.series.get((metric, host, -1))
    if series is None:
        return None
    _, values = series.between(start, end)
    return median(values) if values else None


def _values(rec: Recording, metric: str, host: str, start: float, end: float) -> list[float]:
    series = rec.series.get((metric, host, -1))
    return list(series.between(start, end)[1]) if series is not None else []


def _latest_capture(rec: Recording, host: str, start: float, end: float,
                    history: list[str]) -> Stamped | None:
    found = None
    for c in rec.profiles:
        if c.host != host:
            continue
        if start <= c.t <= end:
            found = c
        elif c.t < start:
            history.append(f"{c.capture_id} (before this phase)")
    return None if found is None else Stamped(found.t, found.capture_id, found.summary)


def _latest_probe(rows: list[tuple[float, str, str, dict[str, Any]]], host: str, start: float,
                  end: float, history: list[str]) -> tuple[float, str, dict[str, Any]] | None:
    found = None
    for t, h, probe_id, detail in rows:
        if h != host:
            continue
        if start <= t <= end:
            found = (t, probe_id, detail)
        elif t < start:
            history.append(f"{probe_id} (before this phase)")
    return found


def witnesses(rec: Recording, host: str, start: float, end: float) -> Witnesses:
    """Everything of ``host`` inside ``[start, end]``."""
    w = Witnesses(host=host, start=start, end=end)
    for r in WITNESSED:  # the table of readings (core/compare/readings.py)
        setattr(w, r.witness, _median(rec, r.series, host, start, end))
    if w.running is None:
        w.running = _median(rec, "engine_running", host, start, end)
        w.queued = _median(rec, "engine_queued", host, start, end)
    if w.token_usage is None:  # no log: the engine's /metrics gauge
        w.token_usage = _median(rec, "engine_token_usage", host, start, end)
    usage = (_values(rec, "token_usage", host, start, end)
             or _values(rec, "engine_token_usage", host, start, end))
    if usage:
        w.full_kv_share = sum(1 for u in usage if u >= 0.95) / len(usage)
    w.retractions = int(sum(_values(rec, "retractions", host, start, end)))
    util = _values(rec, "gpu_util", host, start, end)
    slow = [r for r in rec.throttles.get(host, []) if start <= r[0] <= end]
    if util:
        seconds = {int(r[0]) for r in slow}
        w.throttled_share = min(1.0, len(seconds) / len(util))
        w.throttle_reasons = tuple(sorted({x for r in slow for x in r[2]}))
        ratios = [r[3] for r in slow if r[3] is not None]
        w.throttle_clock = sum(ratios) / len(ratios) if ratios else None
    w.capture = _latest_capture(rec, host, start, end, w.history)
    got = _latest_probe(rec.stacks, host, start, end, w.history)
    if got is not None:
        summary = from_detail(got[2])
        if summary is not None:
            w.stacks = Stamped(got[0], got[1], summary)
    got = _latest_probe(rec.ncu, host, start, end, w.history)
    if got is not None:
        ncu = _ncu_summary(got[2])
        if ncu is not None:
            w.ncu = Stamped(got[0], got[1], ncu)
    return w


def _ncu_summary(detail: dict[str, Any]) -> NcuSummary | None:
    raw = detail.get("ncu")
    if not isinstance(raw, dict):
        return None
    try:
        return msgspec.convert(raw, NcuSummary)
    except (msgspec.ValidationError, TypeError):
        return None


def hosts_of(rec: Recording) -> list[str]:
    """Every host the recording has evidence of, in a stable order."""
    seen: dict[str, None] = {}
    for metric, host, _ in rec.series:
        if metric in ("decode_tps", "gap", "gpu_util", "engine_gen_tps", "running"):
            seen.setdefault(host, None)
    for c in rec.profiles:
        seen.setdefault(c.host, None)
    for rows in (rec.stacks, rec.ncu):
        for _, host, _, _ in rows:
            seen.setdefault(host, None)
    return [h for h in seen if h != "?"] or list(seen)


def run_starts(rec: Recording, host: str) -> list[float]:
    """When a new server process began on ``host``: a ``[[servers]]`` start
    (each start after a stop or a restart), and each run of the investigation."""
    starts = {t for _, t in rec.segments if t > 0}
    for s in rec.servers:
        if isinstance(s, ev.ServerEvent) and s.host == host and s.state == "starting":
            starts.add(s.t)
    return sorted(starts)
