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
from typing import Annotated, Any

import msgspec

from perftriage.core.json_errors import decode_error_text
from perftriage.core.model import events as ev
from perftriage.core.regular_files import NotRegularFile, open_regular  # noqa: F401 - re-exported

CHUNK = 1 << 22  # 4 MiB reads
TAIL_BYTES = 1 << 16  # enough for the summary and a few last events
MAX_HEADER_BYTES = 1 << 16  # line 1; a real header is a few hundred bytes
# an event line over this is skipped (a problem), never held: the writer's
# largest (a log batch at the transcript cap, a probe's capped output) is a
# few MB
MAX_LINE_BYTES = 16 << 20
SKIP_PIECE = 1 << 20  # reading past a too-long line: this much at a time
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


class TooLong(bytes):
    """Stands for an event line over :data:`MAX_LINE_BYTES` (which was skipped,
    never held): it decodes to an error; :func:`line_problem` says why."""

    size: int

    def __new__(cls, size: int) -> "TooLong":
        self = super().__new__(cls, b"\0")
        self.size = size
        return self


def unreadable_text(n: int) -> str:
    """``3 events unreadable``: how every reader says it skipped lines."""
    return f"{n} event{'' if n == 1 else 's'} unreadable"


def line_problem(lineno: int, line: bytes, exc: Exception, terminated: bool) -> LineProblem:
    """The problem of a line that did not decode (or was too long to)."""
    if isinstance(line, TooLong):
        return LineProblem(lineno, f"event of {line.size / (1 << 20):.1f} MiB is over the "
                           f"{MAX_LINE_BYTES >> 20} MiB limit: skipped", torn_tail=not terminated)
    return LineProblem(lineno, decode_error_text(exc), torn_tail=not terminated)


def has_line(path: Path | str, prefix: bytes) -> bool:
    """Whether a line after the header starts with ``prefix`` (a byte search:
    nothing decoded; a string inside an event is JSON-escaped, so only an
    event's own line starts with ``{"type":...``)."""
    needle = b"\n" + prefix
    tail = b""
    with open_regular(path) as fh:
        while data := fh.read(CHUNK):
            held = tail + data  # (a line cut by the read: its start is in the tail)
            if needle in held:
                return True
            tail = held[-(len(needle) - 1):]
    return False


def iter_raw(path: Path | str, start: int = 0, chunk: int = CHUNK) -> Iterator[tuple[int, bytes, bool]]:
    """Yield ``(offset, line, terminated)`` from byte ``start`` on; ``line``
    has no newline; the last one is unterminated when the file does not end
    with a newline (a torn write). A line over :data:`MAX_LINE_BYTES` is
    read past, never held, and yielded as a :class:`TooLong`."""
    limit = MAX_LINE_BYTES
    with open_regular(path) as fh:
        fh.seek(start)
        offset = start
        rest = b""
        skipped = 0  # > 0: inside a line too long to hold, this many bytes so far
        while True:
            data = fh.read(chunk)
            if not data:
                break
            if skipped:
                end = data.find(b"\n")
                if end < 0:
                    skipped += len(data)
                    continue
                yield offset, TooLong(skipped + end), True
                offset += skipped + end + 1
                skipped, data = 0, data[end + 1:]
            lines = (rest + data).split(b"\n") if rest else data.split(b"\n")
            rest = lines.pop()
            for line in lines:
                size = len(line)
                yield offset, (TooLong(size) if size > limit else line), True
                offset += size + 1
            if len(rest) > limit:
                skipped, rest = len(rest), b""
        if skipped:
            yield offset, TooLong(skipped), False
        elif rest:
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
                problems.append(line_problem(lineno, line, exc, terminated))
            continue
        yield offset, event


def read_first_line(path: Path | str) -> bytes:
    """Line 1 with its newline, read with a limit: at most
    ``MAX_HEADER_BYTES + 1`` bytes (more means it is no header)."""
    with open_regular(path) as fh:
        return fh.readline(MAX_HEADER_BYTES + 1)


def header_and_offset(path: Path | str) -> tuple[bytes, int]:
    """The raw first line and the offset of the first event line."""
    first = read_first_line(path)
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


class _Summary(msgspec.Struct):
    """What a summary line must hold to be believed (a hand-edited or foreign
    one may say ``"duration_s": "abc"`` or ``1e400``)."""

    type: str
    events: Annotated[int, msgspec.Meta(ge=0)]
    duration_s: Annotated[float, msgspec.Meta(ge=0, le=1e10)]
    ended: bool = False
    counts: dict[str, Annotated[int, msgspec.Meta(ge=0)]] = {}
    segments: Annotated[int, msgspec.Meta(ge=1)] = 1  # runs of a named investigation


_decode_summary = msgspec.json.Decoder(_Summary).decode


def parse_summary(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(the summary, None), or (None, why it is not one)."""
    try:
        return msgspec.to_builtins(_decode_summary(line)), None
    except DECODE_ERRORS as exc:
        return None, decode_error_text(exc).replace("`", "")


@dataclass
class TailInfo:
    """What the end of a transcript says: the summary when the writer closed
    it, else the time of the last readable event (count unknown)."""

    summary: dict[str, Any] | None
    last_t: float | None
    torn_tail: bool
    size: int
    summary_error: str | None = None  # a summary line that could not be believed: why

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
    with open_regular(path) as fh:
        size = fh.seek(0, os.SEEK_END)
        start = max(0, size - nbytes)
        fh.seek(start)
        data = fh.read()
    lines = data.split(b"\n")
    torn = bool(lines) and lines[-1] != b""
    if start > 0:
        lines = lines[1:]  # the first one is probably cut
    summary: dict[str, Any] | None = None
    summary_error: str | None = None
    last_t: float | None = None
    for line in reversed(lines):
        if not line.strip():
            continue
        if line.startswith(SUMMARY_PREFIX):
            if summary is None and summary_error is None and not torn:
                summary, summary_error = parse_summary(line)
            continue
        if line.startswith(b'{"format"'):
            break  # the header: no events
        try:
            last_t = _decode(line).t
            break
        except DECODE_ERRORS:
            continue  # torn or corrupt: try the line before
    return TailInfo(summary=summary, last_t=last_t, torn_tail=torn, size=size,
                    summary_error=summary_error)


# the bulky lines a reader may take the time of without decoding them
LOG_LINES_PREFIX = b'{"type":"log.lines"'
HOST_SAMPLE_PREFIX = b'{"type":"host.sample","host":"'


def raw_t(line: bytes) -> float:
    """An event's ``t`` read from its encoded line without decoding it. Only
    for log.lines and host.sample lines: their ``t`` is the last ``"t":`` key
    (strings are JSON-escaped, and no nested object of theirs has a ``t``);
    absent means 0 (omitted default)."""
    i = line.rfind(b'"t":')
    if i < 0:
        return 0.0
    j = line.find(b",", i)
    return float(line[i + 4:j if j > 0 else line.rfind(b"}")])
