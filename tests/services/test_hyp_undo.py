"""Undo of hypothesis edits: the inverse events, emitted like any edit, bring
the hypotheses back exactly (title replaced by the note text, a wrong
status, a reorder, a delete with its evidence, a link)."""

from __future__ import annotations

import copy

from perftriage.core.model import events as ev
from perftriage.core.model.hyp_undo import HypothesisUndo
from perftriage.services.investigation.session import Session


def _snapshot(session: Session):
    return [(h.hyp_id, h.title, h.note, h.status,
             [(e.ref_kind, e.ref_id, e.stance) for e in h.evidence])
            for h in copy.deepcopy(session.state.hypotheses)]


def _undo(session: Session, undo: HypothesisUndo) -> str:
    what, events = undo.undo()
    for e in events:
        session.emit(e)
    return what


def test_every_kind_of_edit_is_undone_in_reverse_order():
    session = Session(name="undo")
    undo = HypothesisUndo()
    session.subscribe(undo.observe)
    session.emit(ev.HypothesisAdded(hyp_id="h1", title="MoE on the slow path", note="cutlass"))
    session.emit(ev.HypothesisAdded(hyp_id="h2", title="TP8 all-reduce bound"))
    session.emit(ev.EvidenceLinked(hyp_id="h1", ref_kind="probe", ref_id="p1", stance="for"))
    states = [_snapshot(session)]
    edits = [
        ev.HypothesisUpdated(hyp_id="h1", title="cutlass", note="cutlass"),  # title := note
        ev.HypothesisUpdated(hyp_id="h1", status="refuted"),
        ev.HypothesisUpdated(hyp_id="h2", priority=0),
        ev.EvidenceLinked(hyp_id="h1", ref_kind="probe", ref_id="p1", stance="against"),
        ev.EvidenceUnlinked(hyp_id="h1", ref_kind="probe", ref_id="p1"),
        ev.EvidenceLinked(hyp_id="h2", ref_kind="probe", ref_id="p2"),
        ev.HypothesisDeleted(hyp_id="h1"),
    ]
    for e in edits:
        session.emit(e)
        states.append(_snapshot(session))
    assert states[-1] != states[0]
    for expected in reversed(states[:-1]):
        _undo(session, undo)
        assert _snapshot(session) == expected
    # then the three first events themselves (link, two adds)
    assert _undo(session, undo) == "evidence on 'MoE on the slow path'"
    _undo(session, undo)
    _undo(session, undo)
    assert session.state.hypotheses == [] and undo.undo() is None


def test_undo_is_not_itself_recorded_and_new_edits_stack_after_it():
    session = Session(name="undo")
    undo = HypothesisUndo()
    session.subscribe(undo.observe)
    session.emit(ev.HypothesisAdded(hyp_id="h1", title="a"))
    session.emit(ev.HypothesisUpdated(hyp_id="h1", title="b"))
    assert _undo(session, undo) == "edit of 'a'"
    assert session.state.hypotheses[0].title == "a"
    session.emit(ev.HypothesisUpdated(hyp_id="h1", note="n"))
    assert _undo(session, undo) == "edit of 'a'"
    assert session.state.hypotheses[0].note == ""
    assert _undo(session, undo) == "add of 'a'" and not undo.can_undo
