"""The live triage: the cockpit's diagnosis, phase by phase, at most once a
second, from the live recording the baseline keeps
(:attr:`~perftriage.services.compare.baseline.Baseline.live`: every session
event, series pruned to 300 s; captures, stacks and ncu results kept).

Each evaluation runs :func:`~perftriage.core.triage.phases.host_phases`
for every host with evidence over what the recording still holds, and takes
the last phase: its findings, and what became of the findings of the phase
before it (``Phase.earlier``: resolved, still there) — after a restart or a
change of level — and of the baseline's window when one is marked (``b``).
What it says is one ``triage.updated`` event per host, emitted only when it
changed (a cause, a severity, a lead, a next step, an earlier line at once;
shares and titles alone at most every :data:`SHARES_EVERY_S`), so the
transcript, replay and ``watch`` show the same findings as the cockpit, the
reducer bumps ``Section.TRIAGE`` (the one refresh path), and the checks
read ``triage.*`` from the state.

Cheap: the benchmark (``tests/bench/bench_triage_live.py``) measures one
evaluation against one ``Baseline.result()``. An evaluation that raises is
said once as a note; the cockpit lives on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import msgspec

from perftriage.core.checks import finding_links
from perftriage.core.compare.recording import Recording
from perftriage.core.model import events as ev
from perftriage.core.model.findings import Earlier, Finding
from perftriage.core.triage.phase import Phase
from perftriage.core.triage import same_machine
from perftriage.core.triage.phases import against_baseline, host_phases
from perftriage.core.triage.witnesses import hosts_of
from perftriage.services.compare.baseline import KEEP_S, Baseline
from perftriage.services.investigation.session import Session

INTERVAL_S = 1.0  # at most one evaluation a second
SHARES_EVERY_S = 5.0  # shares and titles alone are emitted at most this often
VS_PHASE = "the phase before"
VS_BASELINE = "the baseline"


@dataclass
class HostTriage:
    """One host's triage now: its current phase and what came before it."""

    host: str
    phase: Phase
    earlier: list[Earlier] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return self.phase.findings

    def signature(self) -> tuple:
        """What changes the diagnosis (not a share moving by a point)."""
        return (self.phase.run_start,
                tuple((f.cause, f.severity, f.confirmed,
                       None if f.next is None else (f.next.kind, tuple(f.next.args)))
                      for f in self.findings),
                tuple(e.text for e in self.earlier))

    def shares(self) -> tuple:
        return tuple((f.cause, None if f.explains_pct is None else round(f.explains_pct),
                      f.title) for f in self.findings)

    def event(self) -> ev.TriageUpdated:
        return ev.TriageUpdated(host=self.host, start=self.phase.start, end=self.phase.end,
                                run_start=self.phase.run_start,
                                findings=list(self.findings), earlier=list(self.earlier))


class LiveTriage:
    def __init__(self, session: Session, baseline: Baseline, *,
                 interval: float = INTERVAL_S,
                 own_hosts: Callable[[], Iterable[str]] | None = None) -> None:
        self.session = session
        self.baseline = baseline
        # the cockpit's own hosts (its config, its command line, what joined in
        # this run): only their findings link to hypotheses; None: no host's
        self.own_hosts = own_hosts or (lambda: ())
        self.interval = interval
        self.current: dict[str, HostTriage] = {}
        # host -> every phase of the last evaluation (the headless triage prints them all)
        self.phases: dict[str, list[Phase]] = {}
        self.tick_cpu_s = 0.0  # CPU time of the last evaluation (the benchmark reads it)
        self.evaluations = 0
        # called after each evaluation with what it found (auto mode listens)
        self.listeners: list[Callable[[dict[str, HostTriage]], object]] = []
        self._last_eval: float | None = None
        self._seen: tuple | None = None  # (event count, baseline) at the last evaluation
        self._sent: dict[str, tuple[tuple, tuple, float]] = {}  # host -> (sig, shares, t)
        # host -> (phase start, its earlier lines): kept once the phase before is pruned
        self._kept: dict[str, tuple[float, list[Earlier]]] = {}
        # (baseline's t, start, end, host) -> the baseline window's last phase
        self._before: dict[tuple[float, float, float, str], Phase | None] = {}
        self._failed = False
        self._aliased: set[str] = set()  # hosts said to be another's machine

    @property
    def live(self) -> Recording:
        return self.baseline.live

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.tick()

    def tick(self, now: float | None = None) -> bool:
        """Evaluate if a second passed and anything happened since; True when it did."""
        state = self.session.state
        now = state.last_t if now is None else now
        if self._last_eval is not None and now - self._last_eval < self.interval:
            return False
        seen = (state.event_count, state.baseline)
        if seen == self._seen:
            return False
        self._last_eval, self._seen = now, seen
        started = time.process_time()
        try:
            self.evaluate(now)
        except Exception as exc:  # noqa: BLE001 - said once, visibly; the cockpit lives on
            if not self._failed:
                self._failed = True
                self.session.emit(ev.NoteAdded(
                    text=f"the triage stopped evaluating: {type(exc).__name__}: {exc}"))
            return False
        self.tick_cpu_s = time.process_time() - started
        return True

    def evaluate(self, now: float) -> dict[str, HostTriage]:
        """Every host's triage at session time ``now``; emits what changed."""
        self.evaluations += 1
        rec = self.live
        # what the recording still holds (it prunes to KEEP_S; a pruned phase would
        # read as one without throughput)
        kept = min((s.t[0] for s in rec.series.values() if s.t), default=0.0)
        start = max(0.0, now - KEEP_S, kept)
        # one machine under several names: one host (as every other reader groups them)
        alias = same_machine.aliases(rec.gpu_uuids)
        for other in alias.keys() - self._aliased:  # said once
            self._aliased.add(other)
            for text in same_machine.said({other: alias[other]}, rec.gpu_uuids):
                self.session.emit(ev.NoteAdded(text=text, host=alias[other]))
            if other in self.session.state.triage:  # its findings are the host's now
                self.session.emit(ev.TriageUpdated(host=other, start=start, end=now,
                                                   same_as=alias[other]))
        rec = same_machine.joined(rec, alias)
        found: dict[str, HostTriage] = {}
        for host in hosts_of(rec):
            phases = host_phases(rec, host, start, now)
            if not phases:
                continue
            self.phases[host] = phases
            found[host] = self._host(rec, host, phases[-1])
        self.current = found
        for host, ht in found.items():
            self._emit(ht, now)
        self._link_evidence(found)
        for listener in list(self.listeners):
            listener(found)
        return found

    def _host(self, rec: Recording, host: str, phase: Phase) -> HostTriage:
        earlier = [msgspec.structs.replace(e, vs=VS_PHASE) for e in phase.earlier]
        kept = self._kept.get(host)
        if earlier:
            self._kept[host] = (phase.start, earlier)
        elif kept is not None and phase.start >= kept[0] - 1.0 and not phase.run_start:
            earlier = kept[1]  # the phase before is pruned: its verdicts stay
        said = {(e.cause, e.state) for e in earlier}
        against = [e for e in self._against_baseline(rec, host, phase)
                   if (e.cause, e.state) not in said]  # the baseline said it already
        return HostTriage(host, phase, earlier + against)

    def _against_baseline(self, rec: Recording, host: str, phase: Phase) -> list[Earlier]:
        b = self.session.state.baseline
        if b is None or phase.start < b.end:
            return []  # no baseline, or the phase holds it: nothing to say yet
        key = (b.t, b.start, b.end, host)
        if key not in self._before:
            before_rec = self.baseline.readings()
            got = host_phases(before_rec, host, b.start, b.end) if before_rec is not None else []
            self._before[key] = got[-1] if got else None
        before = self._before[key]
        if before is None or not before.findings:
            return []
        after = Phase(host, phase.start, phase.end, list(phase.findings), phase.run_start,
                      measured=phase.measured)
        readings = self.baseline.readings()
        if readings is None:
            return []
        against_baseline(readings, before, rec, after)
        label = b.label or "baseline"
        return [msgspec.structs.replace(e, vs=VS_BASELINE, text=f"{e.text} (against {label})")
                for e in after.earlier]

    def _link_evidence(self, found: dict[str, HostTriage]) -> None:
        """Each hypothesis whose check reads a cause the triage confirmed on a
        host gets that finding as evidence (once per host and cause). Only
        what this evaluation derived (``found``), never a finding the state
        holds from a transcript being continued, and only on the cockpit's
        own hosts: a recorded finding is history, not evidence."""
        reading = [h for h in self.session.state.hypotheses if "triage." in h.check]
        if not reading:
            return
        own = set(self.own_hosts())
        for host, told in found.items():
            if host not in own:
                continue
            for link in finding_links.links(reading, host, told.findings):
                self.session.emit(link)

    def _emit(self, ht: HostTriage, now: float) -> None:
        sig, shares = ht.signature(), ht.shares()
        sent = self._sent.get(ht.host)
        if sent is not None:
            if sent[0] == sig and (sent[1] == shares or now - sent[2] < SHARES_EVERY_S):
                return
        self._sent[ht.host] = (sig, shares, now)
        self.session.emit(ht.event())
