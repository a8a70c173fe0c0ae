"""Phase by phase: a recording is cut where a new server process began (a
``[[servers]]`` start or restart, a new run of the investigation) and,
inside each, where the decode throughput changes level (the change points
``compare`` and the report find). Each phase gets its own findings, from
the evidence taken inside it; and each finding of the phase before says
whether it was resolved, with the before/after verdict of the signal it
rested on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perftriage.core.compare.changepoints import phases as level_phases
from perftriage.core.compare.numbers import fmt
from perftriage.core.compare.recording import Recording
from perftriage.core.compare.stats import Better, judge, p_text
from perftriage.core.triage.diagnose import diagnose
from perftriage.core.triage.model import Finding
from perftriage.core.triage.witnesses import hosts_of, run_starts, witnesses

NO_SIGNAL = "no signal to compare"
MIN_PHASE_S = 10.0  # a level shorter than this joins its neighbour
MIN_RUN_S = 2.0  # server starts closer than this to each other or to an end: one cut
ARROW = {"improved": "▲", "regressed": "▼", "no change": "=", "not enough data": "?"}
# the signal a before/after is read on, best first: (series, label, unit, better)
SIGNALS: tuple[tuple[str, str, str, Better], ...] = (
    ("gap", "gap", "x", "lower"), ("decode_tps", "decode", " tok/s", "higher"),
    ("engine_gen_tps", "decode (engine)", " tok/s", "higher"))


@dataclass
class Phase:
    host: str
    start: float
    end: float
    findings: list[Finding]
    run_start: bool  # a new server process began at its start
    earlier: list[dict[str, Any]] = field(default_factory=list)  # the phase before's findings

    @property
    def top(self) -> Finding | None:
        return self.findings[0] if self.findings else None

    def public(self) -> dict[str, Any]:
        return {"from": round(self.start, 3), "to": round(self.end, 3), "host": self.host,
                "findings": [f.public() for f in self.findings], "earlier": self.earlier}


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


def _signal_verdict(rec: Recording, host: str, before: Phase, after: Phase,
                    before_rec: Recording | None = None) -> str:
    for metric, label, unit, better in SIGNALS:
        series = rec.series.get((metric, host, -1))
        was = (before_rec or rec).series.get((metric, host, -1))
        if series is None or was is None:
            continue
        _, a = was.per_second(before.start, before.end)
        _, b = series.per_second(after.start, after.end)
        if not a or not b:
            continue
        j = judge(a, b, better)
        return (f"{label} {fmt(j.a.median)} → {fmt(j.b.median)}{unit} {ARROW[j.verdict]}"
                + (f", {p_text(j.p_value)}" if j.p_value is not None else ""))
    return NO_SIGNAL


def _after_fix(rec: Recording, before: Phase, after: Phase,
               before_rec: Recording | None = None) -> None:
    """Each finding of ``before`` with a cost (confirmed, or a lead): resolved in
    ``after`` or still there
    (``before`` read from ``before_rec`` when it is another recording)."""
    now = {f.cause: f for f in after.findings if f.confirmed}
    leads = {f.cause for f in after.findings if not f.confirmed}
    suspected = {f.cause: f for f in after.findings if f.explains_pct is not None}
    verdict = _signal_verdict(rec, after.host, before, after, before_rec)
    worse = ARROW["regressed"] in verdict
    for f in before.findings:
        if not (f.is_problem or f.is_lead):
            continue
        # a lead is followed by its cause suspected again; a confirmed cause by its confirmation
        still = suspected.get(f.cause) if f.is_lead else now.get(f.cause)
        name = f"{f.cause} (a lead)" if f.is_lead else f.cause
        if verdict == NO_SIGNAL:
            text, state = f"{name}: not known yet — the phase after has no throughput", "unknown"
        elif still is not None:
            shares = (f"{f.explains_pct:.0f} % → {still.explains_pct:.0f} % of the time, "
                      if f.explains_pct is not None and still.explains_pct is not None else "")
            text = f"{name}: still there — {shares}{verdict}"
            state = "still"
        elif f.cause in leads:
            text, state = f"{name}: not measured again yet ({verdict})", "unknown"
        elif worse:  # gone, but the step got slower: nothing to credit a fix with
            text, state = f"{name}: no longer found, but the step got slower — {verdict}", "gone"
        else:
            text, state = f"{name}: resolved — {verdict}", "resolved"
        f.resolved = text if state == "resolved" else None
        after.earlier.append({"cause": f.cause, "state": state, "text": text,
                              "explains_pct": f.explains_pct})


def against_baseline(before_rec: Recording, before: Phase, rec: Recording,
                     after: Phase) -> None:
    """The live cockpit's baseline as the phase before: each finding of
    ``before`` (its window's readings in ``before_rec``, which the live
    recording may have pruned) resolved in ``after`` or still there, appended
    to ``after.earlier`` as after a restart."""
    _after_fix(rec, before, after, before_rec)


def host_phases(rec: Recording, host: str, start: float = 0.0,
                end: float | None = None) -> list[Phase]:
    end = rec.duration if end is None else end
    out: list[Phase] = []
    for a, b, new_run in windows(rec, host, start, end):
        phase = Phase(host, a, b, diagnose(witnesses(rec, host, a, b)), new_run)
        if out:
            _after_fix(rec, out[-1], phase)
        out.append(phase)
    return out


def triage(rec: Recording, start: float = 0.0, end: float | None = None,
           hosts: list[str] | None = None) -> list[Phase]:
    """Every phase of every host in ``[start, end]``, in time order."""
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
