"""``perftriage triage`` as text (the plain skin of a finding's parts,
core/view/finding_parts.py) and as JSON. Every remote string (a frame, a
kernel, a host, a recorded label) goes through the sanitizer: the parts'
strings already have, the phase's host and the label here."""

from __future__ import annotations

from typing import Any

from perftriage.core.clock import clock
from perftriage.core.sanitize import visible
from perftriage.core.triage.phase import Phase
from perftriage.core.view.finding_parts import LEAD, FindingParts, finding_parts, part_lines

_INDENT = " " * 11  # under the cause column


def result_json(label: str, start: float, end: float, hosts: list[str],
                phases: list[Phase]) -> dict[str, Any]:
    return {"label": label, "from": round(start, 3), "to": round(end, 3), "hosts": hosts,
            "phases": [p.public() for p in phases]}


def plain_head(p: FindingParts) -> str:
    """``  high     host-stall               42 %  the host's Python …`` and
    `` (a lead)`` after the title of a finding not confirmed yet."""
    lead = f" ({LEAD})" if p.lead else ""
    return f"  {p.severity:<8} {p.cause:<22} {p.share or 'n/a':>6}  {p.title}{lead}"


def plain_lines(p: FindingParts, detail: bool = True) -> list[str]:
    """The head, then (``detail``) each part on its own line, marked as the
    Triage view marks it: ``←`` evidence, ``✗`` against, ``fix:``, ``next:``."""
    out = [plain_head(p)]
    if detail:
        out += [_INDENT + line for line in part_lines(p, evidence="← ", against="✗ ")]
    return out


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
            out += plain_lines(finding_parts(f), detail)
    return "\n".join(out) + "\n"
