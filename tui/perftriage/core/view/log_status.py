"""What a followed log's state reads like in the Logs pane (pure text).

``following`` / ``reconnecting since T: why`` / ``error: why`` / ``lost: why``
(from ``log.status`` events), and whether the throughput header is stale: a
header whose source is not following shows its last figures with the age
of the last metric line, never as if they were live.
"""

from __future__ import annotations

import time

from perftriage.core.model.state import LogSourceState
from perftriage.core.parse.logparse import MAX_DIGITS


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f}s ago"
    if seconds < 5400:
        return f"{seconds / 60:.0f}m ago"
    return f"{seconds / 3600:.1f}h ago"


def follow_text(src: LogSourceState, now_t: float) -> str:
    """The source's follow state in a few words (``now_t``: session seconds)."""
    if not src.open:
        return f"closed: {src.closed_reason or ''}".rstrip(": ")
    reason = f": {src.follow_reason}" if src.follow_reason else ""
    if src.follow == "reconnecting":
        since = ""
        if src.follow_since is not None:
            ago = _ago(now_t - src.follow_since)
            clock = (time.strftime("%H:%M:%S", time.localtime(src.follow_since_wall))
                     if src.follow_since_wall else None)
            since = f" since {clock} ({ago})" if clock else f" since {ago}"
        return f"reconnecting{since}{reason}"
    if src.follow in ("error", "lost"):
        return f"{src.follow}{reason}"
    kept = (f" · {src.unparsed:,} kept as text (a number past {MAX_DIGITS} digits)"
            if src.unparsed else "")
    return f"following · {src.total_lines:,} lines{kept}"


def stale_note(src: LogSourceState, now_t: float) -> str | None:
    """``None`` while the header is live; else a note saying it is stale and why."""
    if src.open and src.follow == "following":
        return None
    if src.metrics_t is None:
        return None  # no figures to mistake for live ones
    state = "closed" if not src.open else src.follow
    return f"stale ({state}; last metric {_ago(now_t - src.metrics_t)})"
