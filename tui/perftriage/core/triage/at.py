"""The triage's answer at one moment of a recording, per host
(``replay --at T --json``'s ``triage``): what the cockpit said then (the
host's latest ``triage.updated`` up to T, what the Triage view showed), or,
for a transcript made before the live triage (:func:`told_in`), the phase of
the recording's triage that holds T (the phases ``perftriage triage``, the
report and the player read). Either way the same findings, ranked, and
``top``: the cause the triage puts first ("" with none)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from perftriage.core.model import events as ev
from perftriage.core.model.findings import Finding, top
from perftriage.core.store import stream
from perftriage.core.triage.phase import Phase

TOLD_PREFIX = b'{"type":"triage.updated"'


def told_in(path) -> bool:
    """Whether the transcript holds the cockpit's own triage (a
    ``triage.updated``): then a replay shows what it said at each moment
    (nothing before its first word); else, a transcript made before the live
    triage, the recording's triage (:func:`phase_at`) — one rule for
    ``replay --json`` and the player."""
    return stream.has_line(path, TOLD_PREFIX)


def phase_at(phases: list[Phase], host: str, t: float) -> Phase | None:
    """The phase of ``host`` holding ``t`` (the later one at a cut; the
    last one after the recording's end)."""
    mine = [p for p in phases if p.host == host]
    held = [p for p in mine if p.start <= t <= p.end]
    if held:
        return held[-1]
    before = [p for p in mine if p.start <= t]
    return before[-1] if before else None


def as_told(p: Phase) -> ev.TriageUpdated:
    """A phase of the recording's triage as the cockpit would have said it
    (a replay of a transcript made before the live triage shows it so)."""
    return ev.TriageUpdated(host=p.host, start=p.start, end=p.end, run_start=p.run_start,
                            findings=list(p.findings), earlier=list(p.earlier), t=p.start)


def _top(findings: list[Finding]) -> str:
    """The one ``top()`` (core/model/findings.py), as its cause ("" with none)."""
    got = top(findings)
    return got.cause if got is not None else ""


def told_json(e: ev.TriageUpdated) -> dict[str, Any]:
    return {"source": "recorded", "from": round(e.start, 3), "to": round(e.end, 3),
            "top": _top(e.findings), "findings": [f.public() for f in e.findings],
            "earlier": [x.public() for x in e.earlier]}


def phase_json(p: Phase) -> dict[str, Any]:
    d = p.public()
    return {"source": "recording", "from": d["from"], "to": d["to"], "top": _top(p.findings),
            "findings": d["findings"], "earlier": d["earlier"]}


def triage_at_json(told: Mapping[str, ev.TriageUpdated], phases: list[Phase] | None,
                   t: float) -> dict[str, dict[str, Any]]:
    """Per host: the recorded triage at ``t`` (``told``: the state's
    ``triage``), else the recording's phase holding ``t``."""
    out = {host: told_json(e) for host, e in told.items()}
    for host in dict.fromkeys(p.host for p in phases or []):
        if host not in out and (p := phase_at(phases or [], host, t)) is not None:
            out[host] = phase_json(p)
    return out
