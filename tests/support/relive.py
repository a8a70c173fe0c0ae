"""A recorded investigation lived again through the cockpit's live triage
(``services/triage/live.py``): each event emitted at its session time into a
live session, the triage ticked as the cockpit ticks it (at most once a
second), and the whole written as a new transcript — what the cockpit would
have recorded, ``triage.updated`` events included, for a recording made
before the live triage existed."""

from __future__ import annotations

from pathlib import Path

from perftriage.core.model import events as ev
from perftriage.core.store import stream
from perftriage.services.compare.baseline import Baseline
from perftriage.services.investigation.session import Session
from perftriage.services.triage.live import LiveTriage


def relive(src: Path, dst: Path) -> Path:
    header, offset = stream.header_and_offset(src)
    session = Session(name=dst.stem)
    seen: list[ev.Event] = []
    session.subscribe(seen.append)
    live = LiveTriage(session, Baseline(session))
    for _, e in stream.iter_events(src, offset):
        if isinstance(e, ev.TriageUpdated):
            continue  # the triage speaks again, here
        session.continue_clock(e.t)
        session.emit(e)
        live.tick(e.t)
    with dst.open("wb") as fh:
        fh.write(header + b"\n")
        for e in seen:
            fh.write(ev.encode(e).rstrip(b"\n") + b"\n")
    return dst
