"""Session transcripts: JSON Lines, written as events happen.

Line 1 is a header::

    {"format": "perftriage-session", "version": 1, "started_at": ISO8601,
     "hosts": [...], "perftriage": "<version>"}

then one event per line (see :mod:`perftriage.core.model.events`), each carrying ``t``
(seconds since start, monotonic) and ``wall`` (Unix time).

Durability: a writer thread writes and flushes events to the OS within
``GATHER_S`` (off the event loop, so a slow disk never freezes the UI) and fsyncs
at least once a second when it has new events, and at close. A ``kill -9`` thus
loses at most the last ``GATHER_S``, a machine crash at most the last second;
a torn last line is tolerated by the reader.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from perftriage import __version__
from perftriage.core.model import events as ev
from perftriage.core.sanitize import json_escape_controls
from perftriage.core.store.redact import DEFAULT as DEFAULT_REDACTOR, Redactor
from perftriage.core.store import stream
from perftriage.core.store.paths import private_dir
from perftriage.core.store.stream import LineProblem as Problem

FORMAT = "perftriage-session"
VERSION = 1
SUFFIX = ".jsonl"
FSYNC_INTERVAL_S = 1.0
GATHER_S = 0.05  # events reach the OS at most this long after they happen


class TranscriptError(Exception):
    """The file is not a perftriage transcript at all (bad or missing header)."""


class TranscriptCreateError(Exception):
    """A new transcript could not be made: which directory, and why (the OS's reason)."""

    def __init__(self, directory: Path, reason: str) -> None:
        self.directory, self.reason = directory, reason
        super().__init__(f"cannot write a transcript in {directory}: {reason}")


def make_header(started_at: str, hosts: list[str], **extra: Any) -> dict[str, Any]:
    header = {
        "format": FORMAT,
        "version": VERSION,
        "started_at": started_at,
        "hosts": list(hosts),
        "perftriage": __version__,
    }
    header.update(extra)
    return header


def _write_header(fh, header: dict[str, Any]) -> None:
    """The header line, on disk before any event."""
    fh.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
    fh.flush()
    os.fsync(fh.fileno())


class TranscriptWriter:
    """Append-only writer; one instance per live session.

    With ``background=True`` (the default) a writer thread takes the encoded
    events from a queue, writes and flushes each batch at once and fsyncs at
    least once a second: the event loop never waits on the disk (on ext4 an
    append can stall behind a concurrent fsync of the same file, which cost
    a log flood 10-20 %). An event is in the OS within a moment of
    ``write``; ``sync()`` and ``close()`` drain the queue first.
    """

    def __init__(
        self, path: Path, header: dict[str, Any], *, background: bool = True,
        redactor: Redactor | None = None, fd: int | None = None,
        continues: "Continuation | None" = None,
    ) -> None:
        self.path = Path(path)
        self.redactor = redactor or DEFAULT_REDACTOR
        if fd is None:
            self._fh = self._create(self.redactor.value(header))
        else:  # a named investigation's file, opened (and locked) by the caller
            self._fh = os.fdopen(fd, "wb")  # noqa: SIM115 - lives as long as the session
            if continues is None:  # a new investigation: its header first
                _write_header(self._fh, self.redactor.value(header))
        self._last_sync = time.monotonic()
        self._dirty = False
        self._io = threading.Lock()  # the file: writer thread vs sync/close
        self._queue: list[bytes] = []
        self._wake = threading.Condition()
        self._stopping = False
        self.events_written = 0
        self.last_t = 0.0
        self.ended = False
        self.counts: dict[str, int] = {}  # events per type, for the summary line
        # why writing stopped (a full disk): the session says so once; the
        # app goes on, nothing more is queued (memory stays bounded)
        self.error: str | None = None
        self.segments = 1
        if continues is not None:
            # a named investigation's next run: the file has its header and
            # events; the summary at close counts the whole investigation
            self.events_written, self.last_t = continues.events, continues.last_t
            self.counts, self.segments = dict(continues.counts), continues.segments
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(
                target=self._run, name="transcript-writer", daemon=True
            )
            self._thread.start()

    def _create(self, header: dict[str, Any]):
        """The new file with its header on disk; on any failure (a read-only
        or full disk) no file is left and TranscriptCreateError says why."""
        directory = self.path.parent
        try:
            private_dir(directory)
        except OSError as exc:
            raise TranscriptCreateError(directory, exc.strerror or str(exc)) from None
        try:
            # Exclusive create (never clobber an earlier session), readable by the
            # owner only: probe output and logs may hold what redaction missed
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise  # the caller picked a name in use: its bug, not the directory's
        except OSError as exc:
            raise TranscriptCreateError(directory, exc.strerror or str(exc)) from None
        # held while this session records, as a named investigation's is: `perftriage
        # sessions` tells a file being written ("recording") from a run that crashed
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fh = os.fdopen(fd, "wb")
        try:
            _write_header(fh, header)
        except OSError as exc:
            with contextlib.suppress(OSError):
                fh.close()
            with contextlib.suppress(OSError):
                self.path.unlink()  # never an empty transcript
            raise TranscriptCreateError(directory, exc.strerror or str(exc)) from None
        return fh

    @property
    def closed(self) -> bool:
        return self._fh.closed

    def write(self, event: ev.Event) -> None:
        if self._fh.closed or self.error is not None:
            return
        # secrets never on disk; no raw control or bidi character either (tail -f)
        data = json_escape_controls(self.redactor.json_line(ev.encode(event))) + b"\n"
        self.events_written += 1
        self.last_t = max(self.last_t, event.t)
        # every event class has tag="...": msgspec types it str | int | None
        tag = str(type(event).__struct_config__.tag)
        self.counts[tag] = self.counts.get(tag, 0) + 1
        self.ended = self.ended or isinstance(event, ev.SessionEnded)
        if isinstance(event, ev.SegmentStarted):
            self.ended, self.segments = False, max(self.segments, event.segment)
        if self._thread is None:
            with self._wake:
                self._queue.append(data)
            self._drain()
            if time.monotonic() - self._last_sync >= FSYNC_INTERVAL_S:
                self.sync()
            return
        with self._wake:
            self._queue.append(data)
            if len(self._queue) == 1:  # the writer waits for the first; then gathers
                self._wake.notify()

    def _drain(self) -> None:
        """Write the queued events, in order (taken and written under one lock)."""
        with self._io:
            with self._wake:
                batch, self._queue = self._queue, []
            if not batch or self._fh.closed or self.error is not None:
                return
            try:
                self._fh.write(b"".join(batch))
                self._fh.flush()  # in the OS: survives a crash of this process
            except OSError as exc:
                self._failed(exc)
                return
            self._dirty = True

    def _failed(self, exc: OSError) -> None:
        if self.error is None:
            self.error = (f"the transcript is no longer written ({exc.strerror or exc}): "
                          f"{self.path}")
        with self._wake:
            self._queue.clear()

    def _run(self) -> None:
        while True:
            with self._wake:
                if not self._queue and not self._stopping:
                    self._wake.wait(FSYNC_INTERVAL_S / 2)
                if self._queue and not self._stopping:
                    # gather what comes in the next moment into one write: one
                    # wake-up (and one hand-over of the GIL) per GATHER_S in a
                    # flood, not one per event; close() wakes it at once
                    self._wake.wait(GATHER_S)
                stopping = self._stopping
            self._drain()
            if self._dirty and time.monotonic() - self._last_sync >= FSYNC_INTERVAL_S / 2:
                self._fsync()
            if stopping:
                return

    def _fsync(self) -> None:
        with self._io:
            if self._fh.closed:
                return
            self._dirty = False
            try:
                os.fsync(self._fh.fileno())
            except OSError as exc:
                self._failed(exc)
            self._last_sync = time.monotonic()

    def sync(self) -> None:
        """Everything written so far is on disk when this returns."""
        self._drain()
        self._fsync()

    def close(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        self._drain()
        with self._io:
            if not self._fh.closed and self.error is None:
                # the summary line lets `perftriage sessions` list the file
                # from its header and last bytes, whatever its size
                try:
                    self._fh.write(stream.summary_line(
                        events=self.events_written, duration_s=self.last_t,
                        counts=self.counts, ended=self.ended, segments=self.segments))
                    self._fh.flush()
                except OSError as exc:
                    self._failed(exc)
        self._fsync()
        with self._io:
            if not self._fh.closed:
                try:
                    self._fh.close()
                except OSError as exc:  # the unflushed rest of a full disk
                    self._failed(exc)


@dataclass
class Continuation:
    """What a writer continuing a transcript carries over from its events."""

    events: int = 0
    last_t: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    segments: int = 1


@dataclass
class Transcript:
    path: Path
    header: dict[str, Any]
    events: list[ev.Event] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def torn_tail(self) -> bool:
        return any(p.torn_tail for p in self.problems)

    @property
    def duration_s(self) -> float:
        return self.events[-1].t if self.events else 0.0

    @property
    def hosts(self) -> list[str]:
        return list(self.header.get("hosts", []))


def _parse_header(path: Path, first: bytes) -> dict[str, Any]:
    if len(first.rstrip(b"\n")) > stream.MAX_HEADER_BYTES:
        raise TranscriptError(f"{path}: line 1 is longer than "
                              f"{stream.MAX_HEADER_BYTES >> 10} KiB: not a perftriage header")
    try:
        header = json.loads(first)
    except (ValueError, RecursionError) as exc:
        raise TranscriptError(f"{path}: line 1: not a perftriage header ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise TranscriptError(f"{path}: line 1: not a perftriage session (no format header)")
    if header.get("version") != VERSION:
        raise TranscriptError(
            f"{path}: line 1: unsupported transcript version {header.get('version')!r}"
        )
    # the readers trust these shapes: a hand-edited or foreign header may not
    # have them (``"hosts": null``, ``[1]``); keep what is a name, drop the rest
    hosts = header.get("hosts")
    header["hosts"] = list(dict.fromkeys(
        h for h in (hosts if isinstance(hosts, list) else []) if isinstance(h, str) and h))
    for key in ("name", "started_at"):
        if key in header and not isinstance(header[key], str):
            header[key] = "" if header[key] is None else json.dumps(header[key])[:80]
    return header


def read_header(path: Path) -> dict[str, Any]:
    first = stream.read_first_line(path)
    if not first.strip():
        raise TranscriptError(f"{path}: empty file, not a perftriage session")
    return _parse_header(Path(path), first)


def read(path: Path | str) -> Transcript:
    """Read a transcript. Never raises for bad event lines: they become
    ``problems`` (a torn unterminated last line, or a corrupt line in the
    middle with its line number); everything readable is kept. Streams the
    file (see :mod:`perftriage.core.store.stream`); the events list is the
    only copy kept, so prefer :func:`perftriage.core.store.stream.iter_events`
    for long sessions."""
    path = Path(path)
    first, offset = stream.header_and_offset(path)
    if not first.strip():
        raise TranscriptError(f"{path}: empty file, not a perftriage session")
    result = Transcript(path=path, header=_parse_header(path, first))
    result.events = [e for _, e in stream.iter_events(path, offset, problems=result.problems)]
    return result


def count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
