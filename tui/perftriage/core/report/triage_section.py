"""The report's "What's wrong" section: the triage of the recording, phase
by phase, and the headline — the dominant finding of the steady phases
(never the last seconds of a stopped server)."""

from __future__ import annotations

from collections.abc import Callable

from perftriage.core.compare.recording import Recording
from perftriage.core.report.finding_md import md_head, md_lines
from perftriage.core.report.md_text import inline
from perftriage.core.model.findings import NEED_EVIDENCE, Finding, ranked, top
from perftriage.core.triage.phase import Phase
from perftriage.core.triage.phases import steady, triage
from perftriage.core.view.finding_parts import LEAD, finding_parts

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
    return None if f is None else md_head(finding_parts(f))


def triage_section(phases: list[Phase], clock: Callable[[float | None], str]) -> list[str]:
    if not phases:
        return []
    out = ["## What's wrong (triage)", ""]
    top = dominant(phases)
    if top is not None:
        head = md_head(finding_parts(top), bold=True, lead=f"{LEAD}: not confirmed yet")
        out += [f"Dominant over the steady phases: {head}", ""]
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
            out += md_lines(finding_parts(f))
        if len(p.findings) > TOP_PER_PHASE:
            out.append(f"- … {len(p.findings) - TOP_PER_PHASE} more")
        out.append("")
    return out
