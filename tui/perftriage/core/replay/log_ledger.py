"""Which recorded log lines a report counts: each line of a followed file once.

A followed file is one report row (``host:path``), whatever sources read it.
A continued investigation reads a file on under its earlier source from
the line after the last one read (``log.position`` events say where each
start read from), so no line is recorded twice. A transcript recorded
before ``log.position`` existed may hold a file read again from line 1 under a second
source in a later run (seen on an H200: 1,305 lines twice, and throughput
over both copies). The ledger knows, for every file source, which line of
its file each recorded line is, and how far each file has been counted;
a second reading of lines already counted is left out. "The same file" is
judged by its line 1: a reading from line 1 whose first line differs is
another file under the name (rotated), counted afresh; so is a reading
after a restart (tail's "has been replaced" / "file truncated", or a
``log.position`` that says it restarted).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from perftriage.core.model import events as ev

# the events the ledger reads (what a reader hands it)
LOG_EVENTS = (ev.LogSourceOpened, ev.LogLines, ev.LogFilePosition, ev.LogSourceStatus,
              ev.LogSourceClosed)

# tail's notices that it reads a new file under the name (a log.status reason)
_RESTART = re.compile(r"has (?:been replaced|appeared);\s+following new file|: file truncated$")

Feed = Callable[[float | None, str, list[str]], None]


@dataclass
class _File:
    counted: int = 0  # lines 1..counted of the file are counted
    first: str | None = None  # its line 1 as read


class LogLedger:
    """Feed it every ``log.*`` event in order (:func:`event`); it hands each
    batch's lines not counted before to ``feed(t, source_id, lines)``, a
    file's under the first source id that read it."""

    def __init__(self, feed: Feed) -> None:
        self.feed = feed
        self.skipped = 0  # lines left out: read again
        self._label: dict[str, tuple[str, str]] = {}  # file source -> (host, path)
        self._row: dict[tuple[str, str], str] = {}  # (host, path) -> the source id reported
        self._files: dict[tuple[str, str], _File] = {}
        self._at: dict[str, int] = {}  # file source -> lines of its file read so far

    def event(self, e: ev.Event) -> None:
        if isinstance(e, ev.LogLines):
            self._lines(e)
        elif isinstance(e, ev.LogSourceOpened):
            if e.kind == "file":
                label = self._label[e.source_id] = (e.host, e.path)
                self._row.setdefault(label, e.source_id)
                self._files.setdefault(label, _File())
        elif isinstance(e, ev.LogFilePosition):
            if e.line is not None:  # (None: only the file's size, recorded again)
                self._at[e.source_id] = e.line
            if e.restarted:
                self._new_file(e.source_id)
        elif isinstance(e, ev.LogSourceStatus) and e.reason and _RESTART.search(e.reason):
            self._at[e.source_id] = 0
            self._new_file(e.source_id)

    def _new_file(self, source_id: str) -> None:
        if (label := self._label.get(source_id)) is not None:
            self._files[label] = _File()

    def _lines(self, e: ev.LogLines) -> None:
        lines, sid = e.lines, e.source_id
        label = self._label.get(sid)
        if label is None:  # a command's output (or a batch before its source): as it is
            self.feed(e.t, sid, lines)
            return
        file, at = self._files[label], self._at.get(sid, 0)
        if at == 0 and lines and file.counted and lines[0] != file.first:
            file = self._files[label] = _File()  # another file under the name, from its line 1
        if at == 0 and lines and file.first is None:
            file.first = lines[0]
        end = at + len(lines) + e.dropped
        skip = min(len(lines), max(0, file.counted - at))
        self._at[sid], file.counted = end, max(file.counted, end)
        self.skipped += skip
        if skip < len(lines):
            self.feed(e.t, self._row[label], lines[skip:] if skip else lines)
