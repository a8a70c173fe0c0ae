"""Where a series of per-second readings changes level: the phases of a
run (a restart with another backend, CUDA graphs turned on, a warm-up).

Binary segmentation: the split that maximises the CUSUM statistic
``|mean(left) - mean(right)| * sqrt(k (n - k) / n)`` (prefix sums, O(n) per
level) is kept when both sides have :data:`MIN_SIDE` readings, their
medians differ by at least ``min_shift_pct`` and Mann–Whitney U says the
sides differ (p < :data:`ALPHA`); each side is then split again. A one-off
spike moves no median, so it makes no phase."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from perftriage.core.compare.stats import effect_pct, mann_whitney_p, summarize

MIN_SIDE = 5
MIN_SHIFT_PCT = 15.0
ALPHA = 0.001
MAX_POINTS = 16  # change points per series, at most


@dataclass(frozen=True)
class Phase:
    start: float  # session time of its first reading
    end: float  # of its last
    median: float
    n: int


def _best_split(values: Sequence[float], lo: int, hi: int) -> int | None:
    n = hi - lo
    if n < 2 * MIN_SIDE:
        return None
    total = math.fsum(values[lo:hi])
    left = 0.0
    best, best_k = 0.0, None
    for k in range(1, n):
        left += values[lo + k - 1]
        if k < MIN_SIDE or n - k < MIN_SIDE:
            continue
        diff = abs(left / k - (total - left) / (n - k))
        score = diff * math.sqrt(k * (n - k) / n)
        if score > best:
            best, best_k = score, lo + k
    return best_k


def change_points(values: Sequence[float], min_shift_pct: float = MIN_SHIFT_PCT) -> list[int]:
    """Indexes where a new level starts (ascending)."""
    found: list[int] = []
    todo = [(0, len(values))]
    while todo and len(found) < MAX_POINTS:
        lo, hi = todo.pop()
        k = _best_split(values, lo, hi)
        if k is None:
            continue
        left, right = values[lo:k], values[k:hi]
        ml, mr = summarize(left).median, summarize(right).median
        assert ml is not None and mr is not None
        if effect_pct(ml, mr) < min_shift_pct:
            continue
        p = mann_whitney_p(left, right)
        if p is None or p >= ALPHA:
            continue
        found.append(k)
        todo += [(lo, k), (k, hi)]
    return sorted(found)


def phases(times: Sequence[float], values: Sequence[float],
           min_shift_pct: float = MIN_SHIFT_PCT) -> list[Phase]:
    """The series cut at its change points, each part with its median."""
    if not values:
        return []
    cuts = [0, *change_points(values, min_shift_pct), len(values)]
    out = []
    for a, b in zip(cuts, cuts[1:]):
        med = summarize(values[a:b]).median
        assert med is not None
        out.append(Phase(times[a], times[b - 1], med, b - a))
    return out
