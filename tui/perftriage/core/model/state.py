"""In-memory session state, built only by :func:`perftriage.core.model.reducer.apply`.

The UI renders from this; nothing else writes it. Each :class:`Section`
carries a version counter (``state.versions``) bumped by the reducer, so the
UI re-renders (at most at frame rate) only what shows a changed section.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from perftriage.core.model.check_state import ScopeVerdict, VerdictChange
from perftriage.core.model.engine_state import EngineState
from perftriage.core.model.events import (
    GapComputed,
    GapSample,
    GpuCountersSample,
    GpuSample,
    HostSample,
    HypothesisStatus,
    ProbeStatus,
    ProfileCaptured,
    RefKind,
    ServerEvent,
    Stance,
)
from perftriage.core.parse.log_metrics import LogMetrics

HISTORY_POINTS = 300  # ~5 minutes at 1 Hz
DEFAULT_LOG_RING = 100_000


class Section(StrEnum):
    """The parts of the state that change independently. Reducer handlers
    return the one they touched; panes and detail screens declare the ones
    they show (``SECTIONS``) and are re-rendered when one of them changed."""

    HOSTS = "hosts"
    PROBES = "probes"
    LOGS = "logs"
    HYPOTHESES = "hypotheses"
    NOTES = "notes"
    GAPS = "gaps"
    SERVERS = "servers"
    FLEET = "fleet"
    ENGINES = "engines"
    PROFILES = "profiles"
    BASELINE = "baseline"  # the before of a before/after (baseline.marked / .cleared)
    TRIAGE = "triage"  # the live triage's findings per host (triage.updated)
    # Not state: time passed. No event bumps it; the UI marks it once a
    # second for what shows ages and running times.
    CLOCK = "clock"


@dataclass
class HostState:
    name: str
    conn_state: str = "connecting"
    reason: str | None = None
    sample: HostSample | None = None
    sample_t: float | None = None  # session offset of the latest sample
    info: dict[str, Any] = field(default_factory=dict)
    cpu_history: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY_POINTS))
    # per GPU index: utilisation and power history
    util_history: dict[int, deque[float]] = field(default_factory=dict)
    power_history: dict[int, deque[float]] = field(default_factory=dict)
    # GPM bandwidth counters: the latest interval, DRAM GB/s history per GPU
    counters: GpuCountersSample | None = None
    dram_history: dict[int, deque[float]] = field(default_factory=dict)

    @property
    def gpus(self) -> list[GpuSample]:
        return self.sample.gpus if self.sample else []


@dataclass
class ProbeState:
    probe_id: str
    host: str
    kind: str
    args: list[str]
    command: str = ""
    group: str | None = None
    template: str | None = None
    timeout_s: float | None = None
    status: ProbeStatus = "queued"
    queued_t: float = 0.0
    started_t: float | None = None
    finished_t: float | None = None
    exit_status: int | None = None
    duration_s: float | None = None
    summary: str = ""
    detail: dict[str, Any] = field(default_factory=dict)
    stdout: str = ""
    stderr: str = ""

    @property
    def finished(self) -> bool:
        return self.status not in ("queued", "running")

    @property
    def label(self) -> str:
        return " ".join([self.kind, *self.args])


@dataclass
class LogSourceState:
    source_id: str
    host: str
    path: str
    kind: str = "file"
    shown_in: str = ""  # another source's tab shows its lines (LogSourceOpened)
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=DEFAULT_LOG_RING))
    total_lines: int = 0  # ever received, including those evicted from the ring
    dropped: int = 0
    open: bool = True
    closed_reason: str | None = None
    # following / reconnecting / error / lost (LogSourceStatus), why, and since when
    # (session t of the change); ``metrics_t``: t of the last batch with a metric line
    follow: str = "following"
    follow_reason: str | None = None
    follow_since: float | None = None
    follow_since_wall: float | None = None  # the same moment, Unix time (to print a clock)
    metrics_t: float | None = None
    # throughput series and milestones parsed from the lines (perftriage.core.parse.logparse)
    metrics: LogMetrics = field(default_factory=LogMetrics)
    # line numbers (0-based, as counted by total_lines) of the error lines still
    # in the ring, ascending: error navigation bisects this, never scans the ring
    errors: deque[int] = field(default_factory=deque)
    # a followed file: lines of it read (recorded or not: the transcript cap),
    # so the next line is file_line + 1, and the file they were read from
    # ((device, inode) and its size then; LogFilePosition)
    file_line: int = 0
    file_id: tuple[int, int] | None = None
    file_size: int | None = None
    # lines that looked like a metric but held a number past the bounds
    # (logparse.MAX_DIGITS, not finite): kept as text, counted here
    unparsed: int = 0


@dataclass
class Evidence:
    ref_kind: RefKind
    ref_id: str
    stance: Stance
    summary: str = ""
    t: float = 0.0


@dataclass
class Hypothesis:
    hyp_id: str
    title: str
    note: str = ""
    status: HypothesisStatus = "open"
    evidence: list[Evidence] = field(default_factory=list)
    created_t: float = 0.0
    updated_t: float = 0.0
    # the check (core/checks): its text, hold time, scope; the verdict per
    # scope now and every change of verdict (a CheckVerdict each)
    check: str = ""
    for_s: float = 0.0
    scope: str = ""
    verdicts: dict[str, ScopeVerdict] = field(default_factory=dict)
    verdict_log: list[VerdictChange] = field(default_factory=list)


@dataclass
class Note:
    text: str
    t: float
    wall: float
    host: str | None = None


@dataclass
class SessionState:
    name: str = "session"
    started_at: str = ""
    hosts: dict[str, HostState] = field(default_factory=dict)
    probes: dict[str, ProbeState] = field(default_factory=dict)  # insertion order = queue order
    logs: dict[str, LogSourceState] = field(default_factory=dict)
    servers: dict[str, Any] = field(default_factory=dict)
    hypotheses: list[Hypothesis] = field(default_factory=list)  # list order = priority
    notes: list[Note] = field(default_factory=list)
    gaps: list[GapComputed] = field(default_factory=list)
    # the live gap, once a second (bounded: ~1 h at 1 Hz)
    gap_samples: deque[GapSample] = field(default_factory=lambda: deque(maxlen=3600))
    server_events: list[ServerEvent] = field(default_factory=list)
    fleet: Any = None  # the latest FleetUpdated
    # engine /metrics endpoints by source name
    engines: dict[str, EngineState] = field(default_factory=dict)
    # profiler captures in order (summaries, not traces)
    profiles: list[ProfileCaptured] = field(default_factory=list)
    last_t: float = 0.0
    event_count: int = 0
    # the runs of a named investigation so far (SegmentStarted events)
    segments: list[Any] = field(default_factory=list)
    # the before of a before/after (the latest BaselineMarked; None once cleared)
    baseline: Any = None
    # host -> the latest TriageUpdated (the live triage's current phase and findings)
    triage: dict[str, Any] = field(default_factory=dict)
    # what joined the running cockpit (CockpitAdded, less what was removed since)
    additions: list[Any] = field(default_factory=list)
    ended: bool = False
    log_ring: int = DEFAULT_LOG_RING
    # arrival order of log batches across sources, for the merged view:
    # (source_id, total_lines of that source after the batch)
    log_batches: deque[tuple[str, int]] = field(default_factory=lambda: deque(maxlen=100_000))
    versions: dict[Section, int] = field(
        default_factory=lambda: {s: 0 for s in Section if s is not Section.CLOCK}
    )
    hyp_hint: dict[str, int] = field(default_factory=dict, repr=False)  # see hypothesis()

    def bump(self, section: Section) -> None:
        self.versions[section] = self.versions.get(section, 0) + 1

    def host(self, name: str) -> HostState:
        hs = self.hosts.get(name)
        if hs is None:
            hs = self.hosts[name] = HostState(name=name)
        return hs

    def hypothesis(self, hyp_id: str) -> Hypothesis | None:
        hyps = self.hypotheses
        # where it was last found: checked before use, so never wrong (the checks'
        # verdict events look a hypothesis up hundreds of times a second)
        hint = self.hyp_hint.get(hyp_id)
        if hint is not None and hint < len(hyps) and hyps[hint].hyp_id == hyp_id:
            return hyps[hint]
        for i, h in enumerate(hyps):
            if h.hyp_id == hyp_id:
                self.hyp_hint[hyp_id] = i
                return h
        return None
