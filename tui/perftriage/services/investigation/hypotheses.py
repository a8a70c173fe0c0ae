"""Hypotheses from a pack (``--hypotheses``, ``[[hypotheses]]``, the palette's
"load a pack") joining a session; their checks are evaluated by
:class:`perftriage.services.sources.checks.CheckMonitor`."""

from __future__ import annotations

from perftriage.core.model.events import HypothesisAdded
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
        session.emit(HypothesisAdded(hyp_id=_new_id(session), title=h.title, note=h.note,
                                     check=h.check, for_s=h.for_s, scope=h.scope))
        added += 1
    return added


def _new_id(session: Session) -> str:
    while True:
        hyp_id = session.new_id("h")
        if session.state.hypothesis(hyp_id) is None:
            return hyp_id
