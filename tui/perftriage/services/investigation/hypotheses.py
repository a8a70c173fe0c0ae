"""Hypotheses from a pack (``--hypotheses``, ``[[hypotheses]]``, the palette's
"load a pack") joining a session; their checks are evaluated by
:class:`perftriage.services.sources.checks.CheckMonitor`."""

from __future__ import annotations

from perftriage.core.model.events import HypothesisAdded, NoteAdded
from perftriage.services.investigation.session import Session


def add_hypotheses(session: Session, hypotheses) -> int:
    """Add pack hypotheses (``core.checks.pack.PackHypothesis``) to the
    session, skipping any whose title is already there; how many were added."""
    have = {h.title for h in session.state.hypotheses}
    added = 0
    for h in hypotheses:
        if h.title in have:
            continue
        have.add(h.title)
        hyp_id = _new_id(session)
        session.emit(HypothesisAdded(hyp_id=hyp_id, title=h.title, note=h.note,
                                     check=h.check, for_s=h.for_s, scope=h.scope))
        for note in getattr(h, "notes", ()):  # a check reading a deprecated signal
            session.emit(NoteAdded(text=f"{hyp_id}: {note}"))
        added += 1
    return added


def _new_id(session: Session) -> str:
    while True:
        hyp_id = session.new_id("h")
        if session.state.hypothesis(hyp_id) is None:
            return hyp_id
