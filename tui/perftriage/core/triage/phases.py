"""Phase by phase: a recording is cut where a new server process began (a
``[[servers]]`` start or restart, a new run of the investigation) and,
inside each, where the decode throughput changes level (the change points
``compare`` and the report find). Each phase gets its own findings, from
the evidence taken inside it; and each finding of the phase before says
whether it was resolved, with the before/after verdict of the signal it
rested on, once its own witness was taken again (:mod:`.after_fix`).
"""

from __future__ import annotations

from perftriage.core.compare.changepoints import phases as level_phases
from perftriage.core.compare.recording import Recording
from perftriage.core.triage.after_fix import after_fix, measured
from perftriage.core.triage.diagnose import diagnose
from perftriage.core.triage.phase import Phase
from perftriage.core.triage.same_machine import grouped
from perftriage.core.triage.witnesses import hosts_of, run_starts, witnesses

MIN_PHASE_S = 10.0  # a level shorter than this joins its neighbour
MIN_RUN_S = 2.0  # server starts closer than this to each other or to an end: one cut


def windows(rec: Recording, host: str, start: float, end: float) -> list[tuple[float, float, bool]]:
    """(start, end, begins a run) of each phase of ``host`` inside ``[start, end]``."""
    cuts: list[float] = []
    for t in run_starts(rec, host):  # a run and its server's start a moment apart: one cut
        if start + MIN_RUN_S <= t <= end - MIN_RUN_S and (not cuts or t - cuts[-1] >= MIN_RUN_S):
            cuts.append(t)
    runs = list(zip([start, *cuts], [*cuts, end]))
    out: list[tuple[float, float, bool]] = []
    series = rec.series.get(("decode_tps", host, -1)) or rec.series.get(
        ("engine_gen_tps", host, -1))
    for i, (a, b) in enumerate(runs):
        starts = [a]
        if series is not None:
            ts, vs = series.per_second(a, b)
            for ph in level_phases(ts, vs)[1:]:
                if ph.start - starts[-1] >= MIN_PHASE_S and b - ph.start >= MIN_PHASE_S:
                    starts.append(ph.start)
        for j, s in enumerate(starts):
            out.append((s, starts[j + 1] if j + 1 < len(starts) else b, j == 0 and i > 0))
    return out


def against_baseline(before_rec: Recording, before: Phase, rec: Recording,
                     after: Phase) -> None:
    """The live cockpit's baseline as the phase before: each finding of
    ``before`` (its window's readings in ``before_rec``, which the live
    recording may have pruned) resolved in ``after`` or still there, appended
    to ``after.earlier`` as after a restart."""
    after_fix(rec, before, after, before_rec)


def host_phases(rec: Recording, host: str, start: float = 0.0,
                end: float | None = None) -> list[Phase]:
    end = rec.duration if end is None else end
    out: list[Phase] = []
    for a, b, new_run in windows(rec, host, start, end):
        w = witnesses(rec, host, a, b)
        phase = Phase(host, a, b, diagnose(w), new_run, measured=measured(rec, w))
        if out:
            after_fix(rec, out[-1], phase)
        out.append(phase)
    return out


def triage(rec: Recording, start: float = 0.0, end: float | None = None,
           hosts: list[str] | None = None) -> list[Phase]:
    """Every phase of every host in ``[start, end]``, in time order; the
    hosts of one machine are one, named as the live triage names it
    (:func:`~perftriage.core.triage.same_machine.grouped`)."""
    rec = grouped(rec)
    out: list[Phase] = []
    for host in hosts or hosts_of(rec):
        out += host_phases(rec, host, start, end)
    out.sort(key=lambda p: (p.start, p.host))
    return out


def steady(phases: list[Phase]) -> list[Phase]:
    """The phases worth a headline: not the last seconds of a stopped server
    (a phase with no throughput) unless nothing else has any."""
    with_rate = [p for p in phases if any(f.cause != "need-evidence" for f in p.findings)]
    return with_rate or phases
