"""The triage as JSON (``perftriage triage --json``) and as text; every
remote string (a frame, a kernel, a host) goes through the sanitizer."""

from __future__ import annotations

from typing import Any

from perftriage.core.clock import clock
from perftriage.core.sanitize import visible
from perftriage.core.model.findings import Finding
from perftriage.core.triage.phase import Phase


def result_json(label: str, start: float, end: float, hosts: list[str],
                phases: list[Phase]) -> dict[str, Any]:
    return {"label": label, "from": round(start, 3), "to": round(end, 3), "hosts": hosts,
            "phases": [p.public() for p in phases]}


def _finding_lines(f: Finding, detail: bool) -> list[str]:
    share = "  n/a" if f.explains_pct is None else f"{f.explains_pct:4.0f} %"
    lead = "" if f.confirmed else " (lead)"
    lines = [f"  {f.severity:<8} {f.cause:<22} {share}  {visible(f.title)}{lead}"]
    if not detail:
        return lines
    for e in f.evidence:
        at = "" if e.at is None else f" at {clock(e.at)}"
        lines.append(f"           ← {visible(e.label)}{at}: {visible(e.text)}")
    for e in f.against:
        lines.append(f"           ✗ {visible(e.label)}: {visible(e.text)}")
    if f.next is not None:
        step = visible(" ".join([f.next.kind, *f.next.args]))
        lines.append(f"           next: {step} — {f.next.why}")
    for fix in f.fix:
        lines.append(f"           fix: {visible(fix)}")
    return lines


def text(result_label: str, phases: list[Phase], detail: bool = True) -> str:
    out = [f"triage {visible(result_label)}"]
    for p in phases:
        start = " (a new server process)" if p.run_start else ""
        out.append("")
        out.append(f"phase {clock(p.start)}–{clock(p.end)} on {visible(p.host)}{start}")
        for e in p.earlier:
            out.append(f"  after the change: {visible(e.text)}")
        if not p.findings:
            out.append("  nothing found above 3 % of the time")
        for f in p.findings:
            out += _finding_lines(f, detail)
    return "\n".join(out) + "\n"
