"""Session transcripts: JSON Lines, written as events happen.

Line 1 is a header::

    {"format": "perftriage-session", "version": 1, "started_at": ISO8601,
     "hosts": [...], "perftriage": "<version>"}

then one event per line (see :mod:`tui.core.events`), each carrying ``t``
(seconds since start, monotonic) and ``wall`` (Unix time).

Durability: every write is flushed to the OS, and a background thread
fsyncs the file at least once a second when it has new events (off the event
loop, so a slow disk never freezes the UI), and at close. A ``kill -9`` thus
loses at most the last second; a torn last line is tolerated by the reader.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from tui import __version__
from tui.core import events as ev

FORMAT = "perftriage-session"
VERSION = 1
SUFFIX = ".jsonl"
FSYNC_INTERVAL_S = 1.0


class TranscriptError(Exception):
    """The file is not a perftriage transcript at all (bad or missing header)."""


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


class TranscriptWriter:
    """Append-only writer; one instance per live session."""

    def __init__(
        self, path: Path, header: dict[str, Any], *, background_sync: bool = True
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Exclusive create: never clobber an earlier session.
        self._fh = open(self.path, "xb")  # noqa: SIM115 - lives as long as the session
        self._last_sync = time.monotonic()
        self._dirty = False
        self._lock = threading.Lock()  # fsync vs close
        self._stop = threading.Event()
        self.events_written = 0
        self._fh.write(json.dumps(header, separators=(",", ":")).encode() + b"\n")
        self._fh.flush()
        self.sync()
        # fsync off the event loop: a slow disk must not freeze the UI, and a
        # blocked loop must not delay durability.
        self._thread: threading.Thread | None = None
        if background_sync:
            self._thread = threading.Thread(
                target=self._sync_loop, name="transcript-fsync", daemon=True
            )
            self._thread.start()

    @property
    def closed(self) -> bool:
        return self._fh.closed

    def write(self, event: ev.Event) -> None:
        if self._fh.closed:
            return
        self._fh.write(ev.encode(event) + b"\n")
        self._fh.flush()  # in the OS after every event: survives a crash of this process
        self._dirty = True
        self.events_written += 1
        if self._thread is None and time.monotonic() - self._last_sync >= FSYNC_INTERVAL_S:
            self.sync()

    def _sync_loop(self) -> None:
        while not self._stop.wait(FSYNC_INTERVAL_S / 2):
            if self._dirty:
                self.sync()

    def sync(self) -> None:
        with self._lock:
            if self._fh.closed:
                return
            self._dirty = False
            os.fsync(self._fh.fileno())
            self._last_sync = time.monotonic()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        with self._lock:
            if self._fh.closed:
                return
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()


@dataclass
class Problem:
    line: int  # 1-based line number in the file
    message: str
    torn_tail: bool = False

    def __str__(self) -> str:
        kind = "torn last line" if self.torn_tail else "corrupt line"
        return f"line {self.line}: {kind}: {self.message}"


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
    try:
        header = json.loads(first)
    except ValueError as exc:
        raise TranscriptError(f"{path}: line 1: not a perftriage header ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise TranscriptError(f"{path}: line 1: not a perftriage session (no format header)")
    if header.get("version") != VERSION:
        raise TranscriptError(
            f"{path}: line 1: unsupported transcript version {header.get('version')!r}"
        )
    return header


def iter_lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """Yield (line number, raw line, is_last_and_unterminated)."""
    with open(path, "rb") as fh:
        data = fh.read()
    lines = data.split(b"\n")
    last_index = len(lines) - 1
    for i, raw in enumerate(lines):
        if i == last_index and raw == b"":
            break  # file ended with a newline
        yield i + 1, raw, (i == last_index)


def read_header(path: Path) -> dict[str, Any]:
    with open(path, "rb") as fh:
        first = fh.readline()
    if not first.strip():
        raise TranscriptError(f"{path}: empty file, not a perftriage session")
    return _parse_header(Path(path), first)


def read(path: Path | str) -> Transcript:
    """Read a transcript. Never raises for bad event lines: they become
    ``problems`` (a torn unterminated last line, or a corrupt line in the
    middle with its line number); everything readable is kept."""
    path = Path(path)
    header: dict[str, Any] | None = None
    result: Transcript | None = None
    for lineno, raw, unterminated in iter_lines(path):
        if header is None:
            header = _parse_header(path, raw)
            result = Transcript(path=path, header=header)
            continue
        assert result is not None
        if not raw.strip():
            continue
        try:
            result.events.append(ev.decode(raw))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            result.problems.append(Problem(lineno, str(exc), torn_tail=unterminated))
    if result is None:
        raise TranscriptError(f"{path}: empty file, not a perftriage session")
    return result


def count_lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
