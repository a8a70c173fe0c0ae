"""The report's "What's wrong" section: the triage of the recording, phase
by phase, and the headline — the dominant finding of the steady phases
(never the last seconds of a stopped server)."""

from __future__ import annotations

from collections.abc import Callable

from perftriage.core.compare.recording import Recording
from perftriage.core.report.md_text import inline
from perftriage.core.model.findings import NEED_EVIDENCE, Finding, ranked, top
from perftriage.core.triage.phase import Phase
from perftriage.core.triage.phases import steady, triage

TOP_PER_PHASE = 3
MAX_PHASES = 12


def phases_of(recording: Recording | None) -> list[Phase]:
    if recording is None:
        return []
    return triage(recording)


def dominant(phases: list[Phase], host: str | None = None) -> Finding | None:
    """The top (the one ``top()``, core/model/findings.py) of the steady
    phases' findings (of ``host``) together: the problem that explains the
    most time, else the largest lead or remark."""
    mine = [p for p in phases if host is None or p.host == host]
    return top(ranked([f for p in steady(mine) for f in p.findings
                       if f.cause != NEED_EVIDENCE]))


def headline(phases: list[Phase], host: str) -> str | None:
    f = dominant(phases, host)
    return None if f is None else inline(f.line()) + ("" if f.confirmed else " (a lead)")


def triage_section(phases: list[Phase], clock: Callable[[float | None], str]) -> list[str]:
    if not phases:
        return []
    out = ["## What's wrong (triage)", ""]
    top = dominant(phases)
    if top is not None:
        lead = "" if top.confirmed else " (a lead: not confirmed yet)"
        out += [f"Dominant over the steady phases: **{inline(top.line())}**{lead}", ""]
    shown = phases[-MAX_PHASES:]
    if len(phases) > len(shown):
        out += [f"{len(phases) - len(shown)} earlier phases left out.", ""]
    for p in shown:
        start = " — a new server process" if p.run_start else ""
        out += [f"### {clock(p.start)}–{clock(p.end)} on {inline(p.host)}{start}", ""]
        out += [f"- after the change: {inline(e.text)}" for e in p.earlier]
        if not p.findings:
            out.append("- nothing above 3 % of the time")
        for f in p.findings[:TOP_PER_PHASE]:
            out.append(f"- **{inline(f.line())}**" + ("" if f.confirmed else " (a lead)"))
            out += [f"  - {inline(e.label)}{'' if e.at is None else ' at ' + clock(e.at)}: "
                    f"{inline(e.text)}" for e in f.evidence]
            out += [f"  - against: {inline(e.label)}: {inline(e.text)}" for e in f.against]
            if f.next is not None:
                step = " ".join([f.next.kind, *f.next.args])
                out.append(f"  - next: {inline(step)} — {inline(f.next.why)}")
            out += [f"  - fix: {inline(x)}" for x in f.fix]
        if len(p.findings) > TOP_PER_PHASE:
            out.append(f"- … {len(p.findings) - TOP_PER_PHASE} more")
        out.append("")
    return out
