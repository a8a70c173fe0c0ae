"""The runs of a named investigation, for the report and the player."""

from __future__ import annotations

from perftriage.core.model import events as ev
from perftriage.core.model.state import SessionState


def human_gap(seconds: float | None) -> str:
    """``3d 4h``, ``2h 05m``, ``12m 30s``, ``8s``: the time between two runs."""
    if seconds is None:
        return "?"
    s = int(max(0.0, seconds))
    days, rest = divmod(s, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def segment_label(e: ev.SegmentStarted) -> str:
    """``run 2, after 3h 12m`` (the first: ``run 1``)."""
    if e.segment <= 1 or e.gap_s is None:
        return f"run {e.segment}"
    return f"run {e.segment}, after {human_gap(e.gap_s)}"


def segments_section(state: SessionState, clock) -> list[str]:
    """``## Runs``: one line per run with its start (session time and wall
    clock) and the pause before it; nothing for a session of one unnamed run."""
    if len(state.segments) < 2:
        return []
    lines = ["## Runs", ""]
    for seg in state.segments:
        hosts = f" on {', '.join(seg.hosts)}" if seg.hosts else ""
        lines.append(f"- {clock(seg.t)} {segment_label(seg)} (started {seg.started_at}){hosts}")
    lines += ["", "Session times skip the pauses between runs.", ""]
    return lines
