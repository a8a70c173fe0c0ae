"""A slice of a recording: ``NAME`` (all of it), ``NAME#N`` (its run N),
``NAME@FROM-TO`` (session time ``SS``, ``MM:SS`` or ``H:MM:SS``; either end
may be left open), where NAME may also be a transcript path.

:func:`parse_slice` splits the text; :func:`window` turns it into session
times once the recording's runs and length are known. Both raise
:class:`SliceError` with a one-line reason (the CLI's exit 2)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from perftriage.core.clock import clock  # noqa: F401 (the one clock, re-exported)
from perftriage.core.clock import parse_time
from perftriage.core.sanitize import visible

_SEGMENT = re.compile(r"^(?P<src>.+)#(?P<n>\d+)$")
_RANGE = re.compile(r"^(?P<src>.+)@(?P<from>[0-9:.]*)-(?P<to>[0-9:.]*)$")
MAX_RUN_DIGITS = 9  # a run number beyond: "too large" (int() of 5,000 digits raises)
MAX_TIME = 1e10  # seconds: the bound of an event's t (events.Seconds)
SHOWN_CHARS = 120  # a slice, name or time echoed in an error: at most this much of it


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` as an error line may echo it: controls made visible, one
    line, at most ``limit`` characters (the rest said as a count)."""
    if len(text) > limit:
        text = f"{text[:limit // 2]}…({len(text) - limit + limit // 2:,} more characters)"
    return visible(text)


class SliceError(ValueError):
    """A slice that cannot be read or does not fit its recording."""


@dataclass(frozen=True)
class SliceSpec:
    text: str  # as given
    source: str  # the investigation's name or the transcript's path
    segment: int | None = None
    start: float | None = None
    end: float | None = None


@dataclass(frozen=True)
class Window:
    """Session times ``[start, end]`` of a slice, and its label."""

    label: str
    start: float
    end: float

    def __contains__(self, t: float) -> bool:
        return self.start <= t <= self.end

    @property
    def length(self) -> float:
        return self.end - self.start


def _time(text: str, what: str, spec: str) -> float | None:
    if not text:
        return None
    bad = f"{shown(spec)}: {what} {shown(text, 24)} is not a time (SS, MM:SS or H:MM:SS)"
    if len(text) > 24:  # int() of a 5,000-digit hour raises; no session is that long
        raise SliceError(bad)
    try:
        value = parse_time(text)
    except ValueError as exc:
        raise SliceError(f"{shown(spec)}: {what} {visible(str(exc))}") from None
    if value is None:  # "end" never matches the pattern, but keep the type honest
        return None
    if not -MAX_TIME <= value <= MAX_TIME:
        raise SliceError(bad)
    return value


def parse_slice(text: str, exists: Callable[[str], bool] = lambda _: False) -> SliceSpec:
    """The parts of ``text``. A name or path that exists as written is taken
    whole (a file may be called ``run@1-2.jsonl``); else a ``#N`` or
    ``@FROM-TO`` suffix is split off."""
    if not text.strip():
        raise SliceError("an empty slice: give NAME, NAME#N, NAME@FROM-TO or a transcript path")
    if exists(text):
        return SliceSpec(text, text)
    m = _SEGMENT.match(text)
    if m:
        if len(m["n"].lstrip("0")) > MAX_RUN_DIGITS:
            raise SliceError(f"{shown(text)}: run number {shown(m['n'], 24)} is too large")
        n = int(m["n"])
        if n < 1:
            raise SliceError(f"{shown(text)}: runs are numbered from 1")
        return SliceSpec(text, m["src"], segment=n)
    m = _RANGE.match(text)
    if m:
        start = _time(m["from"], "FROM", text)
        end = _time(m["to"], "TO", text)
        if start is not None and end is not None and end <= start:
            raise SliceError(f"{shown(text)}: TO ({m['to']}) is not after FROM ({m['from']})")
        return SliceSpec(text, m["src"], start=start, end=end)
    if "@" in text:
        raise SliceError(f"{shown(text)}: after @ give FROM-TO (SS, MM:SS or H:MM:SS; "
                         "either may be left out: @30-, @-1:30)")
    return SliceSpec(text, text)


def window(spec: SliceSpec, segments: Sequence[tuple[int, float]], duration: float,
           label: str | None = None) -> Window:
    """The session times of ``spec`` in a recording of ``duration`` seconds
    whose runs start at ``segments`` ((number, t) in order; none: one run)."""
    name = label or spec.text
    if spec.segment is not None:
        runs = list(segments) or [(1, 0.0)]
        numbers = [n for n, _ in runs]
        if spec.segment not in numbers:
            have = f"run 1 only" if len(runs) == 1 else f"runs 1-{max(numbers)}"
            raise SliceError(f"{shown(spec.text)}: no run {spec.segment} in {shown(spec.source)} "
                             f"({have})")
        i = numbers.index(spec.segment)
        start = runs[i][1] if i else 0.0
        end = runs[i + 1][1] if i + 1 < len(runs) else duration
        return Window(name, start, end)
    start = 0.0 if spec.start is None else spec.start
    end = duration if spec.end is None else spec.end
    length = f"{clock(duration)} ({duration:.1f} s)"
    if start > duration or (spec.end is not None and spec.end > duration + 1.0):
        raise SliceError(f"{shown(spec.text)}: outside the session, which is {length} long")
    return Window(name, start, min(end, duration))
