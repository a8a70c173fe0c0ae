"""The one reducer: ``apply(state, event)``.

Live mode and replay both feed events through here, so a replayed session
looks exactly like the live one. The reducer does no I/O and reads no clock:
the same events always give the same state. It updates ``state`` in place
(copying 100k-line log rings per event would be ruinous) and bumps the
version counter of every section it touches.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from perftriage.core import probes
from perftriage.core.model import events as ev
from perftriage.core.model import host_info
from perftriage.core.model.check_state import VERDICT_LOG_MAX, ScopeVerdict, VerdictChange
from perftriage.core.model.engine_state import add_sample as add_engine_sample
from perftriage.core.model.engine_state import engine_for
from perftriage.core.model.state import (
    Evidence,
    Hypothesis,
    LogSourceState,
    Note,
    ProbeState,
    Section,
    SessionState,
)

_HANDLERS: dict[type, Callable[[SessionState, ev.Event], Section | None]] = {}


def handles(event_type: type) -> Callable:
    def register(fn: Callable) -> Callable:
        _HANDLERS[event_type] = fn
        return fn

    return register


def apply(state: SessionState, event: ev.Event) -> SessionState:
    handler = _HANDLERS.get(type(event))
    if handler is not None:
        section = handler(state, event)
        if section:
            state.bump(section)
    state.event_count += 1
    state.last_t = max(state.last_t, event.t)
    return state


def replay(events: Iterable[ev.Event], state: SessionState | None = None) -> SessionState:
    state = state or SessionState()
    for event in events:
        apply(state, event)
    return state


# --- hosts -----------------------------------------------------------------


@handles(ev.HostSample)
def _host_sample(state: SessionState, e: ev.HostSample) -> Section:
    hs = state.host(e.host)
    hs.sample = e
    hs.sample_t = e.t
    if hs.conn_state in ("connecting", "retrying"):
        hs.conn_state, hs.reason = "up", None
    if e.cpu_pct is not None:
        hs.cpu_history.append(e.cpu_pct)
    maxlen = hs.cpu_history.maxlen
    util, power = hs.util_history, hs.power_history
    for gpu in e.gpus if e.gpu_age_s is None else ():  # stale readings: no new history
        # (a new deque only for a new GPU: a replay or seek applies millions of these)
        if gpu.util_pct is not None:
            (util.get(gpu.index) or util.setdefault(gpu.index, deque(maxlen=maxlen))).append(
                gpu.util_pct)
        if gpu.power_w is not None:
            (power.get(gpu.index) or power.setdefault(gpu.index, deque(maxlen=maxlen))).append(
                gpu.power_w)
    return Section.HOSTS


@handles(ev.HostStatus)
def _host_status(state: SessionState, e: ev.HostStatus) -> Section:
    hs = state.host(e.host)
    hs.conn_state, hs.reason = e.state, e.reason
    return Section.HOSTS


@handles(ev.HostInfo)
def _host_info(state: SessionState, e: ev.HostInfo) -> Section:
    state.host(e.host).info.update(host_info.clean(e.info))  # typed for every reader
    return Section.HOSTS


# --- probes ----------------------------------------------------------------


@handles(ev.ProbeQueued)
def _probe_queued(state: SessionState, e: ev.ProbeQueued) -> Section:
    state.probes[e.probe_id] = ProbeState(
        probe_id=e.probe_id,
        host=e.host,
        kind=e.kind,
        args=list(e.args),
        command=e.command,
        group=e.group,
        template=e.template,
        timeout_s=e.timeout_s,
        queued_t=e.t,
    )
    return Section.PROBES


@handles(ev.ProbeStarted)
def _probe_started(state: SessionState, e: ev.ProbeStarted) -> Section | None:
    p = state.probes.get(e.probe_id)
    if p is None:
        return None
    p.status, p.started_t = "running", e.t
    return Section.PROBES


@handles(ev.ProbeOutput)
def _probe_output(state: SessionState, e: ev.ProbeOutput) -> Section | None:
    p = state.probes.get(e.probe_id)
    if p is None:
        return None
    if e.stream == "stderr":
        p.stderr += e.data
    else:
        p.stdout += e.data
    return Section.PROBES


@handles(ev.ProbeFinished)
def _probe_finished(state: SessionState, e: ev.ProbeFinished) -> Section | None:
    p = state.probes.get(e.probe_id)
    if p is None:
        return None
    p.status = e.status
    p.finished_t = e.t
    p.exit_status = e.exit_status
    p.duration_s = e.duration_s
    p.summary = e.summary
    p.detail = dict(e.detail)
    spec = probes.KINDS.get(p.kind)
    # older transcripts kept the marked result line / a kind's answer protocol
    p.stdout = probes.shown_stdout(spec, list(p.args), p.stdout)
    return Section.PROBES


@handles(ev.ProbeRemoved)
def _probe_removed(state: SessionState, e: ev.ProbeRemoved) -> str | None:
    if state.probes.pop(e.probe_id, None) is None:
        return None
    for h in state.hypotheses:
        kept = [x for x in h.evidence if (x.ref_kind, x.ref_id) != ("probe", e.probe_id)]
        if len(kept) != len(h.evidence):
            h.evidence = kept
            state.bump(Section.HYPOTHESES)
    return "probes"


# --- logs ------------------------------------------------------------------


@handles(ev.LogSourceOpened)
def _log_opened(state: SessionState, e: ev.LogSourceOpened) -> Section:
    src = state.logs.get(e.source_id)
    if src is None:
        state.logs[e.source_id] = LogSourceState(
            source_id=e.source_id,
            host=e.host,
            path=e.path,
            kind=e.kind,
            shown_in=e.shown_in,
            lines=deque(maxlen=state.log_ring),
        )
    else:
        src.open, src.closed_reason, src.shown_in = True, None, e.shown_in
    return Section.LOGS


@handles(ev.LogLines)
def _log_lines(state: SessionState, e: ev.LogLines) -> Section:
    src = state.logs.get(e.source_id)
    if src is None:
        src = state.logs[e.source_id] = LogSourceState(
            source_id=e.source_id, host="?", path=e.source_id, lines=deque(maxlen=state.log_ring)
        )
    found = e.scan()
    metrics_before = src.metrics.count
    src.metrics.feed(e.lines, src.total_lines + 1, found)
    if src.metrics.count != metrics_before:
        src.metrics_t = e.t
    first = src.total_lines
    src.lines.extend(e.lines)
    src.total_lines += len(e.lines)
    errors = src.errors
    if found.errors:
        errors.extend([first + i for i in found.errors])
    src.unparsed += len(found.unparsed)
    oldest = src.total_lines - len(src.lines)
    while errors and errors[0] < oldest:
        errors.popleft()
    src.dropped += e.dropped
    src.file_line += len(e.lines) + e.dropped
    if e.lines:
        state.log_batches.append((e.source_id, src.total_lines))
    return Section.LOGS


@handles(ev.LogSourceStatus)
def _log_status(state: SessionState, e: ev.LogSourceStatus) -> str | None:
    src = state.logs.get(e.source_id)
    if src is None:
        return None
    if e.state != src.follow or src.follow_since is None:
        src.follow_since, src.follow_since_wall = e.t, e.wall or None
    src.follow, src.follow_reason = e.state, e.reason
    return "logs"


@handles(ev.LogFilePosition)
def _log_position(state: SessionState, e: ev.LogFilePosition) -> None:
    src = state.logs.get(e.source_id)
    if src is None:
        return None
    if e.line is not None:  # (None: a size checkpoint, the count goes on)
        src.file_line = e.line
    src.file_id = (e.dev, e.ino) if e.dev is not None and e.ino is not None else None
    src.file_size = e.size
    return None


@handles(ev.LogSourceClosed)
def _log_closed(state: SessionState, e: ev.LogSourceClosed) -> Section | None:
    src = state.logs.get(e.source_id)
    if src is None:
        return None
    src.open, src.closed_reason = False, e.reason
    return Section.LOGS


@handles(ev.ServerEvent)
def _server(state: SessionState, e: ev.ServerEvent) -> Section:
    state.servers[e.server] = e
    state.server_events.append(e)
    return Section.SERVERS


# --- hypotheses, notes, gap ---------------------------------------------------


@handles(ev.HypothesisAdded)
def _hyp_added(state: SessionState, e: ev.HypothesisAdded) -> Section | None:
    if state.hypothesis(e.hyp_id) is not None:
        return None  # ids are unique (a hand-edited transcript may repeat one): first wins
    h = Hypothesis(
        hyp_id=e.hyp_id, title=e.title, note=e.note, status=e.status, created_t=e.t, updated_t=e.t,
        check=e.check, for_s=e.for_s, scope=e.scope,
    )
    if e.priority is None:
        state.hypotheses.append(h)
    else:
        state.hypotheses.insert(max(0, e.priority), h)
    return Section.HYPOTHESES


@handles(ev.HypothesisUpdated)
def _hyp_updated(state: SessionState, e: ev.HypothesisUpdated) -> Section | None:
    h = state.hypothesis(e.hyp_id)
    if h is None:
        return None
    if (e.check is not None and e.check != h.check) or (e.scope is not None and e.scope != h.scope):
        h.verdicts = {}  # a new condition starts without a verdict (the log keeps the old ones)
    for name in ("title", "note", "status", "check", "for_s", "scope"):  # None: unchanged
        if (value := getattr(e, name)) is not None:
            setattr(h, name, value)
    if e.priority is not None:
        state.hypotheses.remove(h)
        pos = min(max(0, e.priority), len(state.hypotheses))
        state.hypotheses.insert(pos, h)
    h.updated_t = e.t
    return Section.HYPOTHESES


@handles(ev.CheckVerdict)
def _check_verdict(state: SessionState, e: ev.CheckVerdict) -> Section | None:
    h = state.hypothesis(e.hyp_id)
    if h is None:
        return None
    if e.scope:  # "" stood for the check as a whole until it had a scope to run in
        h.verdicts.pop("", None)
    # (the event's values are never changed after it is emitted: shared, not copied)
    h.verdicts[e.scope] = ScopeVerdict(e.verdict, e.t, e.wall, e.values, e.reason)
    h.verdict_log.append(VerdictChange(e.t, e.wall, e.scope, e.verdict, e.values, e.reason))
    if len(h.verdict_log) > VERDICT_LOG_MAX:
        del h.verdict_log[: len(h.verdict_log) - VERDICT_LOG_MAX]
    return Section.HYPOTHESES


@handles(ev.HypothesisDeleted)
def _hyp_deleted(state: SessionState, e: ev.HypothesisDeleted) -> Section | None:
    h = state.hypothesis(e.hyp_id)
    if h is None:
        return None
    state.hypotheses.remove(h)
    return Section.HYPOTHESES


@handles(ev.EvidenceLinked)
def _evidence_linked(state: SessionState, e: ev.EvidenceLinked) -> Section | None:
    h = state.hypothesis(e.hyp_id)
    if h is None:
        return None
    h.evidence = [x for x in h.evidence if (x.ref_kind, x.ref_id) != (e.ref_kind, e.ref_id)]
    h.evidence.append(Evidence(e.ref_kind, e.ref_id, e.stance, e.summary, e.t))
    h.updated_t = e.t
    return Section.HYPOTHESES


@handles(ev.EvidenceUnlinked)
def _evidence_unlinked(state: SessionState, e: ev.EvidenceUnlinked) -> Section | None:
    h = state.hypothesis(e.hyp_id)
    if h is None:
        return None
    h.evidence = [x for x in h.evidence if (x.ref_kind, x.ref_id) != (e.ref_kind, e.ref_id)]
    return Section.HYPOTHESES


@handles(ev.NoteAdded)
def _note(state: SessionState, e: ev.NoteAdded) -> Section:
    state.notes.append(Note(text=e.text, t=e.t, wall=e.wall, host=e.host))
    return Section.NOTES


@handles(ev.GapComputed)
def _gap(state: SessionState, e: ev.GapComputed) -> Section:
    state.gaps.append(e)
    return Section.GAPS


@handles(ev.GpuCountersSample)
def _gpu_counters(state: SessionState, e: ev.GpuCountersSample) -> Section:
    hs = state.host(e.host)
    hs.counters = e
    for g in e.gpus:
        if g.dram_bw_gbs is not None:
            hs.dram_history.setdefault(
                g.index, deque(maxlen=hs.cpu_history.maxlen)).append(g.dram_bw_gbs)
    return Section.HOSTS


@handles(ev.GapSample)
def _gap_sample(state: SessionState, e: ev.GapSample) -> Section:
    state.gap_samples.append(e)
    return Section.GAPS


@handles(ev.FleetUpdated)
def _fleet(state: SessionState, e: ev.FleetUpdated) -> Section:
    state.fleet = e
    return Section.FLEET


@handles(ev.EngineSample)
def _engine_sample(state: SessionState, e: ev.EngineSample) -> Section:
    es = engine_for(state.engines, e.source, e.host)
    if es.conn_state != "up":
        es.conn_state, es.reason = "up", None
    add_engine_sample(es, e.t, e.snapshot)
    return Section.ENGINES


@handles(ev.EngineStatus)
def _engine_status(state: SessionState, e: ev.EngineStatus) -> Section:
    es = engine_for(state.engines, e.source, e.host)
    es.url = e.url or es.url
    es.conn_state, es.reason = e.state, e.reason
    return Section.ENGINES


@handles(ev.ProfileCaptured)
def _profile(state: SessionState, e: ev.ProfileCaptured) -> Section:
    state.profiles.append(e)
    return Section.PROFILES


@handles(ev.SessionEnded)
def _ended(state: SessionState, e: ev.SessionEnded) -> None:
    state.ended = True
    return None


@handles(ev.SegmentStarted)
def _segment(state: SessionState, e: ev.SegmentStarted) -> Section:
    """A new run of the investigation: it is open again, and what the last
    run left queued or running never finished (its process is gone)."""
    state.ended = False
    state.segments.append(e)
    touched = False
    for p in state.probes.values():
        if not p.finished:
            p.status, p.finished_t = "cancelled", e.t
            p.summary = p.summary or "its run of perftriage ended first"
            touched = True
    if touched:
        state.bump(Section.PROBES)
    return Section.NOTES


@handles(ev.BaselineMarked)
def _baseline(state: SessionState, e: ev.BaselineMarked) -> Section:
    state.baseline = e
    return Section.BASELINE


@handles(ev.BaselineCleared)
def _baseline_cleared(state: SessionState, e: ev.BaselineCleared) -> Section | None:
    if state.baseline is None:
        return None
    state.baseline = None
    return Section.BASELINE


@handles(ev.TriageUpdated)
def _triage(state: SessionState, e: ev.TriageUpdated) -> Section:
    if e.same_as:  # one machine under two names: the other name speaks for it
        state.triage.pop(e.host, None)
        return Section.TRIAGE
    state.triage[e.host] = e
    return Section.TRIAGE


@handles(ev.CockpitAdded)
def _cockpit_added(state: SessionState, e: ev.CockpitAdded) -> Section:
    state.additions = [a for a in state.additions if (a.what, a.value) != (e.what, e.value)]
    state.additions.append(e)
    if e.what == "host":
        state.host(e.value)
    return Section.HOSTS


@handles(ev.CockpitRemoved)
def _cockpit_removed(state: SessionState, e: ev.CockpitRemoved) -> Section:
    state.additions = [a for a in state.additions if (a.what, a.value) != (e.what, e.value)]
    if e.what == "host":
        state.hosts.pop(e.value, None)
    return Section.HOSTS
