"""The replay timeline as one row of cells: where the player is, and the
markers along the session (pure: the player bar widget only colours it)."""

from __future__ import annotations

from collections.abc import Iterable

from perftriage.core.replay.timeline import Marker
from perftriage.core.clock import clock  # noqa: F401  (the bar's time format)

# one glyph per marker kind; when several fall in one cell the first kind
# of this order wins (an error is worth more than one more finished probe)
GLYPHS = {"error": "✖", "segment": "║", "baseline": "┃", "server": "⟳", "hypothesis": "◆",
          "triage": "◇", "capture": "▣", "stacks": "≡", "ncu": "◎",
          "gap": "▲", "note": "✎",
          "probe": "•"}
PRIORITY = tuple(GLYPHS)
TRACK, PLAYED, CURSOR = "─", "━", "█"


def cells(markers: Iterable[Marker], duration: float, width: int,
          t: float) -> list[tuple[str, str | None]]:
    """``width`` cells of ``(glyph, kind)``: kind is a marker kind, ``"cursor"``,
    ``"played"`` or None (the track ahead)."""
    if width <= 0:
        return []
    span = max(duration, 1e-9)

    def col(x: float) -> int:
        return min(width - 1, max(0, int(x / span * (width - 1) + 0.5)))

    best: dict[int, str] = {}
    for m in markers:
        c = col(m.t)
        if c not in best or PRIORITY.index(m.kind) < PRIORITY.index(best[c]):
            best[c] = m.kind
    here = col(t)
    out: list[tuple[str, str | None]] = []
    for c in range(width):
        if c == here:
            out.append((CURSOR, "cursor"))
        elif c in best:
            out.append((GLYPHS[best[c]], best[c]))
        else:
            out.append((PLAYED, "played") if c < here else (TRACK, None))
    return out
