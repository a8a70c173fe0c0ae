"""The one clock: a session time as text, wherever perftriage prints one
(the report, the views, the replay bar, compare, the triage, the CLI).

``m:ss``, ``h:mm:ss`` from an hour — the form the slice syntax takes
(``NAME@1:20-3:00``) and ``replay --at`` reads. Seconds are cut, never
rounded up: a time never prints later than it was (35.6 s is ``0:35``, so
``--at 0:35`` lands before it, never past the end of a session). A length
of time (a probe's, a session's) is :func:`human_duration`."""

from __future__ import annotations

import re


def clock(t: float | None) -> str:
    """``0:35``, ``12:05``, ``1:02:03``; ``—`` for no time."""
    if t is None:
        return "—"
    s = max(0, int(t))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def human_duration(s: float | None) -> str:
    """A length of time as a person says it: ``250 ms``, ``4.2 s``,
    ``3 min 5 s``, ``2 h 4 min``; empty for none."""
    if s is None:
        return ""
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60)} s"
    return f"{int(s // 3600)} h {int(s % 3600 // 60)} min"


_CLOCK = re.compile(r"^(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")


def parse_time(text: str) -> float | None:
    """Seconds from ``"12.5"``, ``"MM:SS"``, ``"HH:MM:SS"``; None for ``"end"``.
    Raises ValueError with a one-line reason otherwise."""
    text = text.strip()
    if text.lower() == "end":
        return None
    m = _CLOCK.match(text)
    if m:
        hours, minutes, seconds = m.groups()
        if float(seconds) >= 60 or (hours is not None and int(minutes) >= 60):
            raise ValueError(f"{text!r}: minutes and seconds must be below 60")
        return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r}: expected seconds (12.5), MM:SS, HH:MM:SS or 'end'") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{text!r}: not a time")
    return value
