"""Opening a named investigation for a run of the cockpit.

``open_investigation(NAME, ...)`` gives the :class:`Session` the cockpit
records into: a new investigation when none has that name, else the old one
continued — its events read back through the reducer (hypotheses,
evidence, notes, probes, logs, hosts, gap inputs as they were), its file
reopened for appending, ids and session time counted on, and a
``segment.started`` event written first.

A run killed mid-segment leaves at most a torn last line (see
:mod:`perftriage.core.store.transcript`): it is cut before appending, so the
file stays readable line by line.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from pathlib import Path

from perftriage import __version__
from perftriage.core.model import events as ev
from perftriage.core.store import investigations as inv
from perftriage.core.store import transcript
from perftriage.core.store.paths import private_dir
from perftriage.core.store.redact import Redactor
from perftriage.services.investigation.session import Session

# session time between one run's last event and the next run's first: the
# replay steps over the real gap (shown, never waited through)
SEGMENT_STEP_S = 1.0


def open_investigation(
    name: str,
    sessions_dir: Path,
    hosts: list[str],
    *,
    log_ring: int | None = None,
    redact: list[str] | None = None,
    defer_logs: bool = False,
) -> Session:
    """The session of investigation ``name`` (raises :class:`inv.BadName`,
    :class:`inv.Busy`, :class:`transcript.TranscriptError`, ``OSError``).

    ``defer_logs``: leave the log rings of a continued investigation to
    :func:`restore_logs` (the cockpit runs it after its first frame)."""
    path = inv.path_for(name, sessions_dir)
    private_dir(path.parent)
    now = datetime.now(timezone.utc)
    redactor = Redactor(redact or ())
    session = Session(name=name, hosts=hosts, log_ring=log_ring, redact=redact)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        created = True
    except FileExistsError:
        fd = os.open(path, os.O_RDWR)
        created = False
    restored: inv.Restored | None = None
    try:
        inv.lock(fd, name)
        if created or os.fstat(fd).st_size == 0:
            header = inv.header_for(name, session.state.started_at, hosts)
            session.writer = transcript.TranscriptWriter(path, header, fd=fd, redactor=redactor)
            segment, gap = 1, None
        else:
            restored = _restore(path, name, log_ring, logs=not defer_logs)
            if defer_logs:
                session.pending_logs = (path, restored.log_offsets, log_ring)
            os.ftruncate(fd, restored.end)  # a torn last line: cut, the rest kept
            os.lseek(fd, 0, os.SEEK_END)
            session.state = restored.state
            for host in hosts:
                session.state.host(host)
            session.continue_ids()
            session.continue_clock(restored.continuation.last_t + SEGMENT_STEP_S)
            session.writer = transcript.TranscriptWriter(
                path, restored.header, fd=fd, redactor=redactor,
                continues=restored.continuation)
            segment = restored.continuation.segments + (1 if restored.state.segments else 0)
            gap = round(time.time() - restored.last_wall, 3) if restored.last_wall else None
    except BaseException:
        os.close(fd)
        raise
    session.emit(ev.SegmentStarted(segment=segment, started_at=now.isoformat(timespec="seconds"),
                                   gap_s=gap, hosts=list(hosts), perftriage=__version__))
    if restored is not None and (corrupt := [p for p in restored.problems if not p.torn_tail]):
        session.count_unreadable(len(corrupt))
        # said once in the investigation itself: the rest of the file was read
        session.emit(ev.NoteAdded(text=f"continued past {len(corrupt)} unreadable line(s) of "
                                       f"the transcript: {corrupt[0]}"))
    return session


async def restore_logs(session: Session) -> None:
    """Fill a continued investigation's log rings (left by ``defer_logs``)
    in a thread, then hand them to the state on the event loop."""
    import asyncio  # noqa: PLC0415

    pending, session.pending_logs = session.pending_logs, None
    if pending is None:
        return
    path, offsets, log_ring = pending
    logs = await asyncio.to_thread(inv.restore_logs, path, offsets, log_ring)
    inv.adopt_logs(session.state, logs)


def _restore(path: Path, name: str, log_ring: int | None, *, logs: bool) -> inv.Restored:
    restored = inv.restore(path, log_ring, logs=logs)
    if not inv.is_investigation(restored.header) or restored.header.get("name") != name:
        raise transcript.TranscriptError(
            f"{path}: not the transcript of investigation {name!r} "
            f"(its header names {restored.header.get('name')!r})")
    return restored
