"""A hypothesis and its evidence as words, without Textual: the status and
stance icons, what a piece of evidence says now (a probe's verdict and
summary as they are, else what was recorded), and what is recorded when a
probe is attached. The Hypotheses pane, its detail view and the report's
Hypotheses section say them alike."""

from __future__ import annotations

from perftriage.core.clock import human_duration
from perftriage.core.model.state import Evidence, ProbeState, SessionState

HYPOTHESIS_ICON = {"open": "○", "testing": "◐", "supported": "✔", "refuted": "✘", "parked": "⏸"}
STANCE_ICON = {"for": "▲", "against": "▼"}


def evidence_result(state: SessionState, e: Evidence) -> tuple[str, str]:
    """(status, text) of one piece of evidence: for a probe its verdict and
    summary as they are now; for a log line, metric or note what was recorded."""
    if e.ref_kind == "probe":
        p = state.probes.get(e.ref_id)
        if p is None:
            return "?", e.summary or f"probe {e.ref_id} (not in this session)"
        text = f"{p.label} on {p.host} → {p.status}"
        if p.summary:
            text += f": {p.summary}"
        if p.duration_s is not None:
            text += f" ({human_duration(p.duration_s)})"
        return p.status, text
    return e.ref_kind, e.summary or f"{e.ref_kind} {e.ref_id}"


def evidence_label(e: Evidence) -> str:
    return f"{e.ref_kind} {e.ref_id}" if e.ref_id else e.ref_kind


def probe_summary(p: ProbeState) -> str:
    """What EvidenceLinked.summary records when a probe is attached."""
    text = f"{p.label} on {p.host} → {p.status}"
    return f"{text}: {p.summary}" if p.summary else text
