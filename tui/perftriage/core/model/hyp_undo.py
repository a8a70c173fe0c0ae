"""Undo for hypothesis edits: a mistyped title, a wrong status, a deleted
hypothesis or evidence come back with one key.

:class:`HypothesisUndo` watches the events (a Session listener) and keeps
its own copy of each hypothesis as it was *before* the event, so it can
write the inverse events: an update is undone by an update back, an add by
a delete, a delete by an add (same id, place, status) plus its evidence, a
link by an unlink (or the earlier link). Undoing emits those events, so the
transcript records the undo like any other edit and replay agrees.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from msgspec.structs import replace

from perftriage.core.model import events as ev

UNDO_DEPTH = 100


@dataclass
class _Hyp:
    title: str
    note: str
    status: ev.HypothesisStatus
    evidence: dict[tuple[str, str], ev.EvidenceLinked] = field(default_factory=dict)


class HypothesisUndo:
    def __init__(self) -> None:
        self._hyps: dict[str, _Hyp] = {}
        self._order: list[str] = []
        self._stack: list[tuple[str, list[ev.Event]]] = []  # (what, inverse events)
        self._replaying = 0  # events still to come from an undo: not recorded

    @property
    def can_undo(self) -> bool:
        return bool(self._stack)

    def undo(self) -> tuple[str, list[ev.Event]] | None:
        """(what is undone, the events to emit), or None when nothing is left."""
        if not self._stack:
            return None
        what, events = self._stack.pop()
        self._replaying += len(events)
        return what, events

    def observe(self, e: ev.Event) -> None:
        """Every event of the session, after it was applied (listener order)."""
        inverse = self._inverse(e)
        self._track(e)
        if self._replaying:
            if inverse is not None:
                self._replaying -= 1
            return
        if inverse is not None and inverse[1]:
            self._stack.append(inverse)
            del self._stack[:-UNDO_DEPTH]

    def _inverse(self, e: ev.Event) -> tuple[str, list[ev.Event]] | None:
        if isinstance(e, ev.HypothesisAdded):
            if e.hyp_id in self._hyps:  # a repeated id changes nothing (first wins)
                return "add", []
            return f"add of {e.title!r}", [ev.HypothesisDeleted(hyp_id=e.hyp_id)]
        h = self._hyps.get(getattr(e, "hyp_id", ""))
        if isinstance(e, ev.HypothesisUpdated):
            if h is None:
                return "edit", []
            back = ev.HypothesisUpdated(
                hyp_id=e.hyp_id,
                title=h.title if e.title is not None and e.title != h.title else None,
                note=h.note if e.note is not None and e.note != h.note else None,
                status=h.status if e.status is not None and e.status != h.status else None,
                priority=(self._order.index(e.hyp_id) if e.priority is not None else None),
            )
            what = "status" if e.status is not None else "order" if e.priority is not None \
                else "edit"
            return f"{what} of {h.title!r}", [back]
        if isinstance(e, ev.HypothesisDeleted):
            if h is None:
                return "delete", []
            add = ev.HypothesisAdded(hyp_id=e.hyp_id, title=h.title, note=h.note,
                                     status=h.status,
                                     priority=self._order.index(e.hyp_id))
            links = [replace(link, t=0.0, wall=0.0) for link in h.evidence.values()]
            return f"delete of {h.title!r}", [add, *links]
        if isinstance(e, ev.EvidenceLinked):
            if h is None:
                return "evidence", []
            before = h.evidence.get((e.ref_kind, e.ref_id))
            unlink: ev.Event = (replace(before, t=0.0, wall=0.0) if before is not None else
                                ev.EvidenceUnlinked(hyp_id=e.hyp_id, ref_kind=e.ref_kind,
                                                    ref_id=e.ref_id))
            return f"evidence on {h.title!r}", [unlink]
        if isinstance(e, ev.EvidenceUnlinked):
            before = h.evidence.get((e.ref_kind, e.ref_id)) if h else None
            if h is None or before is None:
                return "evidence", []
            return f"evidence removal on {h.title!r}", [replace(before, t=0.0, wall=0.0)]
        return None

    def _track(self, e: ev.Event) -> None:
        if isinstance(e, ev.HypothesisAdded):
            if e.hyp_id in self._hyps:
                return
            self._hyps[e.hyp_id] = _Hyp(e.title, e.note, e.status)
            if e.hyp_id in self._order:
                self._order.remove(e.hyp_id)
            at = len(self._order) if e.priority is None else max(0, min(e.priority,
                                                                        len(self._order)))
            self._order.insert(at, e.hyp_id)
        elif isinstance(e, ev.HypothesisUpdated) and e.hyp_id in self._hyps:
            h = self._hyps[e.hyp_id]
            h.title = e.title if e.title is not None else h.title
            h.note = e.note if e.note is not None else h.note
            h.status = e.status if e.status is not None else h.status
            if e.priority is not None:
                self._order.remove(e.hyp_id)
                self._order.insert(max(0, min(e.priority, len(self._order))), e.hyp_id)
        elif isinstance(e, ev.HypothesisDeleted):
            self._hyps.pop(e.hyp_id, None)
            if e.hyp_id in self._order:
                self._order.remove(e.hyp_id)
        elif isinstance(e, ev.EvidenceLinked) and e.hyp_id in self._hyps:
            self._hyps[e.hyp_id].evidence[(e.ref_kind, e.ref_id)] = e
        elif isinstance(e, ev.EvidenceUnlinked) and e.hyp_id in self._hyps:
            self._hyps[e.hyp_id].evidence.pop((e.ref_kind, e.ref_id), None)
