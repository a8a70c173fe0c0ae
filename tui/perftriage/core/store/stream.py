"""Streaming transcript reads: never the whole file in memory.

A transcript can hold a million events (800 MB); reading it with
``read_bytes().split()`` costs the file's size twice over in memory before
one event is decoded. Everything here reads fixed-size chunks from a byte
offset and decodes line by line with the one msgspec decoder, so a reader
can start anywhere an index recorded (a keyframe's offset) and stop early
(``--at T``).

The writer ends a cleanly closed transcript with one summary line (see
:func:`summary_line`); it is not an event and readers here skip it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from perftriage.core.model import events as ev

CHUNK = 1 << 22  # 4 MiB reads
TAIL_BYTES = 1 << 16  # enough for the summary and a few last events
SUMMARY_TYPE = "session.summary"
SUMMARY_PREFIX = b'{"type":"session.summary"'
_decode = ev._decoder.decode
# what decoding one line can raise (a too-deeply nested line: RecursionError)
DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


@dataclass
class LineProblem:
    line: int  # 1-based line number in the file
    message: str
    torn_tail: bool = False

    def __str__(self) -> str:
        kind = "torn last line" if self.torn_tail else "corrupt line"
        return f"line {self.line}: {kind}: {self.message}"


def iter_raw(path: Path | str, start: int = 0, chunk: int = CHUNK) -> Iterator[tuple[int, bytes, bool]]:
    """Yield ``(offset, line, terminated)`` from byte ``start`` on; ``line``
    has no newline; the last one is unterminated when the file does not end
    with a newline (a torn write)."""
    with open(path, "rb") as fh:
        fh.seek(start)
        offset = start
        rest = b""
        while True:
            data = fh.read(chunk)
            if not data:
                break
            lines = (rest + data).split(b"\n") if rest else data.split(b"\n")
            rest = lines.pop()
            for line in lines:
                yield offset, line, True
                offset += len(line) + 1
        if rest:
            yield offset, rest, False


def is_summary(line: bytes) -> bool:
    return line.startswith(SUMMARY_PREFIX)


def iter_events(
    path: Path | str,
    start: int = 0,
    first_line: int = 2,
    problems: list[LineProblem] | None = None,
) -> Iterator[tuple[int, ev.Event]]:
    """Yield ``(offset, event)`` for each event line from byte ``start``
    (which must be the start of an event line; ``first_line`` is its line
    number). Bad lines go to ``problems`` (when given) and are skipped;
    blank lines and the summary line are skipped."""
    lineno = first_line - 1
    for offset, line, terminated in iter_raw(path, start):
        lineno += 1
        if not line or line.isspace() or line.startswith(SUMMARY_PREFIX):
            continue
        try:
            event = _decode(line)
        except DECODE_ERRORS as exc:
            if problems is not None:
                problems.append(LineProblem(lineno, str(exc), torn_tail=not terminated))
            continue
        yield offset, event


def header_and_offset(path: Path | str) -> tuple[bytes, int]:
    """The raw first line and the offset of the first event line."""
    with open(path, "rb") as fh:
        first = fh.readline()
    return first.rstrip(b"\n"), len(first)


# --- the summary line --------------------------------------------------------


def summary_line(*, events: int, duration_s: float, counts: dict[str, int],
                 ended: bool, segments: int = 1) -> bytes:
    """What the writer appends at close: enough for ``perftriage sessions``
    to list the file without reading its events. A named investigation's
    file holds one per run that closed cleanly; the last one counts them all."""
    return json.dumps(
        {"type": SUMMARY_TYPE, "events": events, "duration_s": round(duration_s, 6),
         "ended": ended, "counts": counts, "segments": segments},
        separators=(",", ":"),
    ).encode() + b"\n"


@dataclass
class TailInfo:
    """What the end of a transcript says: the summary when the writer closed
    it, else the time of the last readable event (count unknown)."""

    summary: dict[str, Any] | None
    last_t: float | None
    torn_tail: bool
    size: int

    @property
    def events(self) -> int | None:
        return None if self.summary is None else int(self.summary.get("events", 0))

    @property
    def duration_s(self) -> float | None:
        if self.summary is not None:
            return float(self.summary.get("duration_s", 0.0))
        return self.last_t


def read_tail(path: Path | str, nbytes: int = TAIL_BYTES) -> TailInfo:
    """Read only the last ``nbytes`` of the file."""
    with open(path, "rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        start = max(0, size - nbytes)
        fh.seek(start)
        data = fh.read()
    lines = data.split(b"\n")
    torn = bool(lines) and lines[-1] != b""
    if start > 0:
        lines = lines[1:]  # the first one is probably cut
    summary: dict[str, Any] | None = None
    last_t: float | None = None
    for line in reversed(lines):
        if not line.strip():
            continue
        if line.startswith(SUMMARY_PREFIX):
            if summary is None and not torn:
                try:
                    summary = json.loads(line)
                except (ValueError, RecursionError):
                    pass
            continue
        if line.startswith(b'{"format"'):
            break  # the header: no events
        try:
            last_t = _decode(line).t
            break
        except DECODE_ERRORS:
            continue  # torn or corrupt: try the line before
    return TailInfo(summary=summary, last_t=last_t, torn_tail=torn, size=size)
