"""A live (or replayed) session: the one place events enter.

``Session.emit(event)`` stamps the event (``t`` since start, ``wall``),
appends it to the transcript, applies it to ``state`` through the reducer,
and tells subscribers. Everything — probe runner, samplers, log followers,
UI actions — goes through ``emit``; nothing writes ``state`` directly.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from perftriage.core.model import reducer
from perftriage.core.store import transcript
from perftriage.core.store.redact import Redactor
from perftriage.core.model.events import Event, NoteAdded, SegmentStarted, SessionEnded
from perftriage.core.model.state import SessionState

Listener = Callable[[Event], None]


def session_filename(name: str, now: datetime) -> str:
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in name).strip("-") or "session"
    return f"{now:%Y%m%d-%H%M%S}-{safe}{transcript.SUFFIX}"


@dataclass(frozen=True)
class SessionMode:
    """What a session is, for everyone who shows or drives it: whether its
    hosts run (probes, samplers, logs, servers), whether it takes notes and
    hypotheses, whether anything is written from it, and how it is named."""

    label: str  # in the app's sub-title
    live: bool  # hosts run: probes, sources, logs, servers, captures
    annotations: bool  # takes notes and hypotheses
    writes: bool  # writes files (a derived session, a theme choice)
    refusal: str = ""  # what a key that would touch a host says when refused
    # shows a transcript that no longer grows (a replay, a saved session read
    # whole; not one followed as it is written): what is read of it once stays true
    whole: bool = False


LIVE = SessionMode("live", live=True, annotations=True, writes=True)
REPLAY_REFUSAL = "replay: keys that touch a host (probes, servers, log follows) are off"
# a saved session read whole (Session.from_transcript): shown, never added to
RECORDED = SessionMode("REPLAY", live=False, annotations=False, writes=True,
                       refusal=REPLAY_REFUSAL, whole=True)
# the player (services/investigation/replay.py): additions go to a derived session
REPLAY = SessionMode("REPLAY", live=False, annotations=True, writes=True, refusal=REPLAY_REFUSAL,
                     whole=True)
# following a recording (services/investigation/watch.py): nothing enters, nothing is written
WATCH = SessionMode("WATCH (read-only)", live=False, annotations=False, writes=False,
                    refusal="watch: read-only (no probe, no host, no note: nothing is written)")


class Session:
    """``mode`` says what the session is (:class:`SessionMode`): live, unless
    it was built on a given ``state`` (a recording) or a subclass says."""

    def __init__(
        self,
        name: str = "session",
        hosts: list[str] | None = None,
        sessions_dir: Path | None = None,
        *,
        log_ring: int | None = None,
        state: SessionState | None = None,
        redact: list[str] | None = None,
        mode: SessionMode | None = None,
    ) -> None:
        now = datetime.now(timezone.utc)
        self.mode = mode or (RECORDED if state is not None else LIVE)
        self.state = state or SessionState(name=name, started_at=now.isoformat(timespec="seconds"))
        if log_ring:
            self.state.log_ring = log_ring
        for host in hosts or []:
            self.state.host(host)  # as replay does from the header
        self._t0 = time.monotonic()
        self._listeners: list[Listener] = []
        self._ids: dict[str, itertools.count] = {}
        self.writer: transcript.TranscriptWriter | None = None
        self._write_error_noted = False
        self.source_path: Path | None = None  # the transcript a replay was read from
        # a continued investigation's log events still to apply (services/investigation/named.py)
        self.pending_logs: tuple[Path, list[int], int | None] | None = None
        # events of the transcript this session was read from (or continues)
        # that did not decode: skipped, counted, said in the UI's sub-title
        self._unreadable = 0
        if sessions_dir is not None and state is None:
            path = Path(sessions_dir) / session_filename(name, now)
            n = 1
            while path.exists():  # two sessions started in the same second
                n += 1
                path = Path(sessions_dir) / session_filename(f"{name}-{n}", now)
            header = transcript.make_header(self.state.started_at, hosts or [], name=name)
            self.writer = transcript.TranscriptWriter(path, header, redactor=Redactor(redact or ()))

    @property
    def replay(self) -> bool:
        """Not live: a recording shown (replayed, played, watched)."""
        return not self.mode.live

    @property
    def path(self) -> Path | None:
        return self.writer.path if self.writer else None

    @property
    def unreadable(self) -> int:
        """How many events of the transcript read were skipped (did not decode)."""
        return self._unreadable

    def count_unreadable(self, n: int) -> None:
        """``n`` events of the transcript read did not decode (were skipped)."""
        self._unreadable = n

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    def new_id(self, prefix: str) -> str:
        """``p1``, ``p2``, ... per prefix, counted from 1 in this session
        (ids already in a replayed state are not looked at: a replay's own
        ids get an ``r`` in front instead, see services/investigation/replay.py)."""
        counter = self._ids.get(prefix)
        if counter is None:
            counter = self._ids[prefix] = itertools.count(1)
        return f"{prefix}{next(counter)}"

    def continue_ids(self) -> None:
        """Count ids on from those already in the state (a continued
        investigation: its next probe after ``p7`` is ``p8``, never ``p1``)."""
        st = self.state
        ids = [*st.probes, *(p.group or "" for p in st.probes.values()),
               *(h.hyp_id for h in st.hypotheses), *st.logs]
        top: dict[str, int] = {}
        for i in ids:
            prefix = i.rstrip("0123456789")
            if prefix != i and prefix.isalpha():
                top[prefix] = max(top.get(prefix, 0), int(i[len(prefix):]))
        self._ids = {p: itertools.count(n + 1) for p, n in top.items()}

    def continue_clock(self, t: float) -> None:
        """Stamp the next events from session time ``t`` on (a continued
        investigation's time goes on where its last run stopped)."""
        self._t0 = time.monotonic() - t

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def emit(self, event: Event, record: Event | None = None) -> Event:
        """``record``, when given, is written to the transcript instead of
        ``event`` (the log follower records only metric/error lines once the
        transcript's log cap is reached, while the live state gets them all)."""
        if self.state.ended and not isinstance(event, SegmentStarted):
            return event  # (a continued investigation opens again with a new segment)
        if not self.replay:
            event.t = round(self.elapsed, 6)
            event.wall = round(time.time(), 6)
            if record is not None:
                record.t, record.wall = event.t, event.wall
        if self.writer is not None:
            self.writer.write(record if record is not None else event)
            if self.writer.error is not None and not self._write_error_noted:
                self._write_error_noted = True  # said once, live only (it cannot be written)
                self.emit(NoteAdded(text=self.writer.error))
        reducer.apply(self.state, event)
        for listener in tuple(self._listeners):
            listener(event)
        return event

    def close(self, reason: str = "quit") -> None:
        if not self.state.ended:
            self.emit(SessionEnded(reason=reason))
        if self.writer is not None:
            self.writer.close()

    @classmethod
    def from_transcript(cls, path: Path | str) -> tuple["Session", transcript.Transcript]:
        """A read-only session rebuilt by feeding a saved transcript through the reducer."""
        tr = transcript.read(path)
        name = str(tr.header.get("name") or Path(path).stem)
        state = SessionState(name=name, started_at=str(tr.header.get("started_at", "")))
        for host in tr.hosts:
            state.host(host)
        session = cls(name=name, state=state, mode=RECORDED)
        session.count_unreadable(len(tr.problems))
        for event in tr.events:
            reducer.apply(state, event)
        session.source_path = Path(path)
        return session, tr
