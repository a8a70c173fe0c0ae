"""Every state change in a session is one of these events.

Events are msgspec Structs tagged by ``type`` so a transcript line decodes
straight back to the right class. ``t`` is the monotonic offset in seconds
since the session started, ``wall`` the Unix wall time; both are stamped by
the session when the event is emitted (see ``perftriage.services.investigation.session``).

Adding an event: subclass :class:`Event` with a ``tag`` (above
:data:`ALL_EVENTS`, which is built from the subclasses), and teach
:func:`perftriage.core.model.reducer.apply` about it.
"""

from __future__ import annotations

from typing import Annotated, Any, Generic, Literal, TypeVar, Union, overload

import msgspec

from perftriage.core.model.findings import Earlier, Finding
from perftriage.core.parse import batch_scan
from perftriage.core.parse.engine_metrics import EngineSnapshot
from perftriage.core.profile.model import ProfileSummary
from perftriage.core.parse.gpu_sample import GpuProcess, GpuSample  # noqa: F401 - re-exported (ev.GpuSample)


# a time a reader can do arithmetic with (a datetime, a timedelta): a record
# with ``t: 1e30`` or an infinity is a bad line, not a crash in every reader
Seconds = Annotated[float, msgspec.Meta(ge=-1e10, le=1e10)]

T = TypeVar("T")


class Unrecorded(Generic[T]):
    """A typed attribute an event carries that is never part of it as data:
    declared without an annotation, so it is no msgspec field (never encoded
    into a transcript, decoded, or compared), and kept in the event's own
    ``__dict__`` (the event class needs ``dict=True``). None until set."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, objtype: type | None = None) -> Unrecorded[T]: ...
    @overload
    def __get__(self, obj: object, objtype: type | None = None) -> T | None: ...

    def __get__(self, obj: object | None, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        return obj.__dict__.get(self._name)

    def __set__(self, obj: object, value: T | None) -> None:
        obj.__dict__[self._name] = value


class Event(msgspec.Struct, tag_field="type", kw_only=True, omit_defaults=True):
    t: Seconds = 0.0
    wall: Seconds = 0.0


# --- hosts -----------------------------------------------------------------

HostConnState = Literal["connecting", "up", "retrying", "down"]


class HostSample(Event, tag="host.sample"):
    host: str
    cpu_pct: float | None = None
    per_cpu_pct: list[float] = []
    mem_used_bytes: int | None = None
    mem_total_bytes: int | None = None
    load1: float | None = None
    load5: float | None = None
    load15: float | None = None
    # CPU contention: PSI cpu "some avg10" (%), and the share of CFS periods the
    # cgroup the sampler sees (a container's own) was throttled in (%)
    cpu_psi_some: float | None = None
    cpu_throttled_pct: float | None = None
    # the same cgroup's own cpu.pressure "some avg10" (%: its tasks' wait, not
    # the whole machine's), and the share of wall time it was throttled
    # (throttled_usec's growth between two readings, %)
    cpu_psi_some_cgroup: float | None = None
    cpu_throttled_time_pct: float | None = None
    gpus: list[GpuSample] = []
    gpu_error: str | None = None  # e.g. "no NVIDIA GPU", shown instead of rows
    gpu_age_s: float | None = None  # set when the GPU readings are stale (source stalled)


class HostStatus(Event, tag="host.status"):
    host: str
    state: HostConnState
    reason: str | None = None


class HostInfo(Event, tag="host.info"):
    """Slow-changing facts about a host (topology, driver, bandwidth)."""

    host: str
    info: dict[str, Any] = {}


# --- probes ----------------------------------------------------------------

# "no-match": the probe ran and the answer is "nothing" (a grep with 0 matches)
ProbeStatus = Literal["queued", "running", "ok", "failed", "no-match", "error", "timeout",
                      "cancelled"]
ProbeStream = Literal["stdout", "stderr"]


class ProbeQueued(Event, tag="probe.queued"):
    probe_id: str
    host: str
    kind: str
    args: list[str] = []
    command: str = ""
    group: str | None = None  # shared by the probes of one fan-out
    timeout_s: float | None = None
    template: str | None = None


class ProbeStarted(Event, tag="probe.started"):
    probe_id: str


class ProbeOutput(Event, tag="probe.output"):
    probe_id: str
    stream: ProbeStream = "stdout"
    data: str = ""


class ProbeFinished(Event, tag="probe.finished"):
    probe_id: str
    status: ProbeStatus
    exit_status: int | None = None
    duration_s: float | None = None
    summary: str = ""
    detail: dict[str, Any] = {}


class ProbeRemoved(Event, tag="probe.removed"):
    """A probe taken out of the session (a mistyped one): gone from the
    probes pane, from the hypotheses' evidence and from the report. The
    transcript keeps its events, followed by this one."""

    probe_id: str


# --- logs ------------------------------------------------------------------


LogKind = Literal["file", "server", "command"]


class LogSourceOpened(Event, tag="log.opened"):
    source_id: str
    host: str
    path: str
    kind: LogKind = "file"
    # the source whose tab shows these lines: a server started here whose log
    # is followed already (its stream carries its guard's marks only; one
    # file, one tab)
    shown_in: str = ""


class LogLines(Event, tag="log.lines", dict=True):
    """A batch of lines from one source (never one event per line).

    Live, the log follower parses each batch once (in the parse helper during
    a flood) and hands that parse along on the event (:meth:`with_scan`). It
    is ``parsed``, an :class:`Unrecorded` attribute, so it never reaches the
    transcript; a batch read back from a transcript is parsed when the
    reducer first asks."""

    source_id: str
    lines: list[str] = []
    dropped: int = 0  # lines not recorded because of the transcript cap
    # the batch's parse, handed along live (no annotation: not a field)
    parsed = Unrecorded[batch_scan.Scan]()

    def with_scan(self, found: batch_scan.Scan) -> LogLines:
        """This event carrying ``found``, which must be ``batch_scan.scan(self.lines)``."""
        self.parsed = found
        return self

    def scan(self) -> batch_scan.Scan:
        """The batch's parse: the one handed along, else parsed now (once)."""
        found = self.parsed
        if found is None:
            found = self.parsed = batch_scan.scan(self.lines)
        return found


class LogSourceClosed(Event, tag="log.closed"):
    source_id: str
    reason: str | None = None


LogFollowState = Literal["following", "reconnecting", "error", "lost"]


class LogSourceStatus(Event, tag="log.status"):
    """A followed log's state, only on a change: ``following``; ``reconnecting``
    (the connection or the follow command broke; retried with backoff, resuming
    after the last line received); ``error`` (tail cannot read the path now:
    missing, unreadable -- it keeps trying); ``lost`` (given up: a directory,
    an authentication or host key failure). ``reason`` says why; the event's
    own ``wall`` is the moment the state began."""

    source_id: str
    state: LogFollowState
    reason: str | None = None


class LogFilePosition(Event, tag="log.position"):
    """Where a followed file is read from: the next line read is line
    ``line + 1`` of the file whose device, inode and size (bytes) a ``stat``
    gave just before reading started. Written before each (re)start of the
    follow command. A continued investigation reads on from here when the
    path still names the same file (device, inode) and it has not shrunk;
    else the file was rotated or truncated and is read from its line 1
    (``line`` 0). ``restarted``: why reading restarted there, if it did.
    While lines arrive the size is recorded again now and then, without a
    ``line`` (the count of lines read goes on from the log batches)."""

    source_id: str
    line: Annotated[int, msgspec.Meta(ge=0)] | None = 0
    dev: int | None = None
    ino: int | None = None
    size: Annotated[int, msgspec.Meta(ge=0)] | None = None
    restarted: str | None = None


class ServerEvent(Event, tag="server"):
    """Launcher life cycle: starting / ready / failed / exited / stopped."""

    server: str
    host: str
    state: Literal["starting", "ready", "failed", "exited", "stopped"]
    detail: str = ""
    command: str = ""
    time_to_ready_s: float | None = None
    last_lines: list[str] = []


# --- hypotheses, notes, gap ---------------------------------------------------

HypothesisStatus = Literal["open", "testing", "supported", "refuted", "parked"]
HYPOTHESIS_STATUSES: tuple[HypothesisStatus, ...] = ("open", "testing", "supported", "refuted", "parked")


class HypothesisAdded(Event, tag="hypothesis.added"):
    hyp_id: str
    title: str
    note: str = ""
    status: HypothesisStatus = "open"
    priority: int | None = None  # None: append at the bottom
    # a condition over live signals that keeps its own verdict (core/checks):
    # true for ``for_s`` seconds -> supported; ``scope`` "" (the signals decide),
    # gpu / host / engine / session, optionally ":PATTERN" for some hosts only
    check: str = ""
    for_s: float = 0.0
    scope: str = ""


class HypothesisUpdated(Event, tag="hypothesis.updated"):
    hyp_id: str
    title: str | None = None
    note: str | None = None
    status: HypothesisStatus | None = None
    priority: int | None = None  # new position in the list (0 = top)
    check: str | None = None  # "" removes the check
    for_s: float | None = None
    scope: str | None = None


CheckVerdictKind = Literal["supported", "refuted", "pending", "no data", "error"]


class CheckVerdict(Event, tag="check.verdict"):
    """A hypothesis's check changed verdict on one scope ("node1 GPU 2",
    "node1", "engine:node1", "session"; "" for the check as a whole while it
    has nowhere to run or does not compile), with the values that decided it
    (``{"gap.traffic_ratio": 2.02}``) and the reason in words."""

    hyp_id: str
    scope: str
    verdict: CheckVerdictKind
    check: str = ""
    values: dict[str, Any] = {}
    reason: str = ""


class HypothesisDeleted(Event, tag="hypothesis.deleted"):
    hyp_id: str


# host: "NAME:gpus" / "NAME:topology"; finding: "HOST:CAUSE" (the live triage's)
RefKind = Literal["probe", "log", "metric", "note", "host", "profile", "finding"]
Stance = Literal["for", "against"]


class EvidenceLinked(Event, tag="evidence.linked"):
    hyp_id: str
    ref_kind: RefKind = "probe"
    ref_id: str = ""
    stance: Stance = "for"
    summary: str = ""


class EvidenceUnlinked(Event, tag="evidence.unlinked"):
    hyp_id: str
    ref_kind: str = "probe"
    ref_id: str = ""


class NoteAdded(Event, tag="note"):
    text: str
    host: str | None = None


class GapComputed(Event, tag="gap.computed"):
    floor_ms: float
    ceiling_tps: float
    bandwidth_gbs_total: float
    measured_ms: float | None = None
    gap: float | None = None
    efficiency_pct: float | None = None
    inputs: dict[str, Any] = {}
    # where measured_ms came from ("engine n1: mean ITL, last 10 s", "the log",
    # "typed in") and the batch it was measured at (None: not known)
    measured_from: str | None = None
    measured_batch: float | None = None


# --- GPU bandwidth counters and the live gap -------------------------

CounterSource = Literal["nvml-gpm", "nvidia-smi-dmon", "unavailable"]


class GpuCounters(msgspec.Struct, kw_only=True, omit_defaults=True):
    """GPM counters of one GPU over one interval (None: no value, never 0 for n/a)."""

    index: int
    name: str = ""
    dram_busy_pct: float | None = None  # GPM DRAM bandwidth utilisation
    dram_bw_gbs: float | None = None  # dram_busy_pct x peak_gbs
    peak_gbs: float | None = None
    sm_active_pct: float | None = None
    sm_occupancy_pct: float | None = None
    tensor_active_pct: float | None = None
    nvlink_rx_gbs: float | None = None
    nvlink_tx_gbs: float | None = None
    util_pct: float | None = None  # utilization.gpu in the same interval
    stuck: bool = False  # counters read 0 for several intervals while the GPU was busy


class GpuCountersSample(Event, tag="gpu.counters"):
    """Per-GPU bandwidth counters of one host, at most once a second."""

    host: str
    source: CounterSource
    gpus: list[GpuCounters] = []
    error: str | None = None  # why the counters are n/a (source "unavailable")
    peak_source: str | None = None  # where peak_gbs came from (NVML or the table)


class GapSample(Event, tag="gap.sample"):
    """The gap to the floor in figures, at most once a second. Field names
    match ``perftriage gap --json``. It judges nothing: the cause is the
    triage's (``triage.updated``). ``verdict`` and ``verdict_kind`` are read
    from transcripts recorded before the triage was the one judge (and
    written no more): they decode and replay, and ``gap.verdict*`` checks read
    them there."""

    host: str
    floor_ms: float | None = None
    measured_ms: float | None = None
    gap: float | None = None
    peak_gbs: float | None = None
    dram_bw_gbs: float | None = None
    dram_busy_pct: float | None = None
    useful_bw_gbs: float | None = None
    traffic_ratio: float | None = None
    idle_pct: float | None = None
    tokens_per_s: float | None = None
    nvlink_pct: float | None = None
    batch: int | None = None
    slowest_gpu: int | None = None  # the GPU that deviates (by MAD), see outlier_side
    outlier_side: str = ""  # "low" / "high"
    verdict: str = ""  # old transcripts only (see the class doc)
    verdict_kind: str = ""  # old transcripts only
    source: CounterSource = "unavailable"
    engine_read_gbs: float | None = None  # the engine's own read estimate per GPU
    accept_len: float | None = None  # tokens per step with speculative decoding
    disagreement: str | None = None  # witnesses more than 1.5x apart
    counter_quality: str = ""  # ok, stuck, none, inconsistent ("" in old transcripts)
    note: str = ""  # the figures' caveats in words (never a cause)


# --- fleet (Prometheus) -------------------------------------------------------


class FleetOutlier(msgspec.Struct, kw_only=True, omit_defaults=True):
    host: str
    gpu: int | None = None  # None: an engine (per-host) metric
    metric: str
    value: float
    fleet_median: float
    distance: float  # |value - median| / MAD (see core/analysis/outliers.py)


class FleetUpdated(Event, tag="fleet.updated"):
    """One read of the fleet from Prometheus: counts, medians, the top outliers."""

    source: str
    hosts: int
    gpus: int
    medians: dict[str, float] = {}
    outliers: list[FleetOutlier] = []  # largest distance first, at most 50
    outlier_count: int = 0


# --- inference engine /metrics ------------------------------------------

EngineConnState = Literal["connecting", "up", "retrying", "down"]


class EngineSample(Event, tag="engine.sample"):
    """One scrape of an engine's /metrics (cumulative values), at most once a second;
    rates and quantiles are derived from consecutive samples by the reducer."""

    source: str  # e.g. "engine:node1"
    host: str
    snapshot: EngineSnapshot


class EngineStatus(Event, tag="engine.status"):
    """The /metrics endpoint's state (only on a change), with the reason."""

    source: str
    host: str
    url: str = ""
    state: EngineConnState = "connecting"
    reason: str | None = None


# --- profiler captures ---------------------------------------------------------


class ProfileCaptured(Event, tag="profile.captured"):
    """A profile captured from a running server: the kernel summary only (the
    rank trace files stay next to the transcript, named in ``files``)."""

    capture_id: str  # "prof1", "prof2", ...
    host: str
    summary: ProfileSummary
    url: str = ""
    engine: str = ""  # sglang | vllm | file
    steps: int | None = None
    files: list[str] = []
    missing: list[str] = []  # ranks that wrote no trace in time
    via: str = ""  # how the files came: SFTP | exec (the host has no SFTP) | local
    refused: list[str] = []  # "NAME: what it is": trace-named entries that were no plain file


class SessionEnded(Event, tag="session.ended"):
    reason: str = "quit"


class SegmentStarted(Event, tag="segment.started"):
    """One run of a named investigation begins (the first run, and every
    ``perftriage --session NAME`` that continues it). ``t`` goes on from the
    previous segment, so a replay never waits through the time between runs;
    ``gap_s`` says how long that was (wall clock), ``None`` for the first."""

    segment: int = 1
    started_at: str = ""
    gap_s: float | None = None
    hosts: list[str] = []
    perftriage: str = ""


class BaselineMarked(Event, tag="baseline.marked"):
    """The before of a before/after (``b`` in the cockpit): session time
    ``[start, end]`` the live state is compared with, in the Gap, Engine and
    Profile views, the report's first table and ``perftriage compare``.
    ``label`` says what it is (``"run 1"``, ``"0:10-0:40"``)."""

    start: Seconds
    end: Seconds
    label: str = ""


class BaselineCleared(Event, tag="baseline.cleared"):
    """No baseline any more (``b`` again on a marked one)."""


class TriageUpdated(Event, tag="triage.updated"):
    """The live triage of one host changed (``services/triage/live.py``,
    evaluated at most once a second, emitted only when what it says
    changed): the current phase ``[start, end]``, its findings ranked (each
    a :class:`~perftriage.core.model.findings.Finding`, in the JSON shape
    ``perftriage triage --json`` writes: ``cause, severity, title,
    explains_pct, evidence, against, next, fix, host, confirmed,
    resolved``) and the findings of what came before it (``earlier``: the
    phase before a restart or level change, or the baseline; each an
    :class:`~perftriage.core.model.findings.Earlier`, ``{cause, state,
    text, explains_pct, vs}``). Typed, so a recorded finding of the wrong
    shape makes the event unreadable (skipped and counted), never a crash
    in a reader. ``same_as``: the host was found to be the same machine as
    that one (the same GPU UUIDs, core/triage/same_machine.py): it has no
    triage of its own from now on, that host's speaks for it."""

    host: str
    start: Seconds = 0.0
    end: Seconds = 0.0
    run_start: bool = False  # a new server process began at ``start``
    findings: Annotated[list[Finding], msgspec.Meta(max_length=256)] = []
    earlier: Annotated[list[Earlier], msgspec.Meta(max_length=256)] = []
    same_as: str = ""


Growable = Literal["host", "engine", "prometheus", "pack"]


class CockpitAdded(Event, tag="cockpit.added"):
    """Something joined the running cockpit from its palette or keys: a host
    (``value`` as typed: ``user@host``, an ssh alias or a config name), an
    engine ``/metrics`` URL (``host`` it is read from), a Prometheus URL, a
    hypothesis pack. A continued investigation starts them again."""

    what: Growable
    value: str
    host: str | None = None


class CockpitRemoved(Event, tag="cockpit.removed"):
    what: Growable
    value: str


def tagged_events(base: type[Event] = Event) -> tuple[type[Event], ...]:
    """Every tagged subclass of ``base`` defined so far, in definition order."""
    out: list[type[Event]] = []
    for sub in base.__subclasses__():
        out.append(sub)
        out += tagged_events(sub)
    return tuple(out)


# Built from the classes above (keep new events above this line): a new
# event class is registered for decoding by being defined, nothing to list.
ALL_EVENTS = tagged_events()

_encoder = msgspec.json.Encoder()
# decodes to the tagged class: the union of ALL_EVENTS (built at run time, so
# its static type is their base class)
_decoder: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Union[ALL_EVENTS])


def encode(event: Event) -> bytes:
    return _encoder.encode(event)


def decode(data: bytes | str) -> Event:
    return _decoder.decode(data)
