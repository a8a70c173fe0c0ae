"""Medians and verdicts: is B better than A, and is the difference real?

Kayenta's judge, per metric: a two-sided Mann–Whitney U test (scipy.stats's
asymptotic method, re-implemented and tested against it)
on the per-second readings of the two slices at 98 % confidence, and an
effect-size gate so that a tiny but "significant" difference reads
``no change`` (per-second readings are autocorrelated: the test alone
would call a 1 % drift real). The direction decides improved/regressed:
more tok/s is better, more ms is worse."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

ALPHA = 0.02  # 98 % confidence
MIN_EFFECT_PCT = 5.0
MIN_READINGS = 10  # a side with fewer: "not enough data"

Better = Literal["higher", "lower"]
# "changed": a load reading (running requests, power) moved; neither better nor worse
VerdictKind = Literal["improved", "regressed", "no change", "not enough data", "changed"]


@dataclass(frozen=True)
class Summary:
    median: float | None
    p10: float | None
    p90: float | None
    n: int

    def to_json(self) -> dict:
        return {"median": self.median, "p10": self.p10, "p90": self.p90, "n": self.n}


def percentile(ordered: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default) of sorted values."""
    if len(ordered) == 1:
        return ordered[0]
    pos = q * (len(ordered) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarize(values: Sequence[float]) -> Summary:
    if not values:
        return Summary(None, None, None, 0)
    ordered = sorted(values)
    return Summary(percentile(ordered, 0.5), percentile(ordered, 0.1),
                   percentile(ordered, 0.9), len(ordered))


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided Mann–Whitney U p-value: the normal approximation with the
    tie correction and the continuity correction, as
    ``scipy.stats.mannwhitneyu(a, b, method="asymptotic")`` computes it
    (tested against it; scipy itself costs ~0.6 s to import). 1.0 when every
    reading is the same; None when a side is empty."""
    n1, n2 = len(a), len(b)
    if not n1 or not n2:
        return None
    pooled = sorted([(v, 0) for v in a] + [(v, 1) for v in b])
    n = n1 + n2
    rank_sum_a = 0.0
    ties = 0.0
    i = 0
    while i < n:
        j = i + 1
        while j < n and pooled[j][0] == pooled[i][0]:
            j += 1
        avg_rank = (i + j + 1) / 2.0  # ranks i+1 .. j
        rank_sum_a += avg_rank * sum(1 for k in range(i, j) if pooled[k][1] == 0)
        t = j - i
        ties += t * t * t - t
        i = j
    u1 = rank_sum_a - n1 * (n1 + 1) / 2.0
    u = max(u1, n1 * n2 - u1)
    mu = n1 * n2 / 2.0
    var = n1 * n2 / 12.0 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (u - mu - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(z / math.sqrt(2.0)))


def change_pct(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a == 0:
        return None
    return (b - a) / abs(a) * 100.0


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or a == 0:
        return None
    return b / a


def effect_pct(a: float, b: float) -> float:
    """|change| in percent of A (of B when A is 0; 0 when both are)."""
    if a != 0:
        return abs(b - a) / abs(a) * 100.0
    return 0.0 if b == 0 else 100.0


@dataclass(frozen=True)
class Judgement:
    a: Summary
    b: Summary
    ratio: float | None
    change_pct: float | None
    p_value: float | None
    verdict: VerdictKind


def judge(a: Sequence[float], b: Sequence[float], better: Better,
          min_effect_pct: float = MIN_EFFECT_PCT, alpha: float = ALPHA,
          min_readings: int = MIN_READINGS, load: bool = False) -> Judgement:
    """The verdict on one metric from the readings of A and of B (``load``:
    what the slices ran under, never better or worse: ``changed``)."""
    sa, sb = summarize(a), summarize(b)
    r, pct = ratio(sa.median, sb.median), change_pct(sa.median, sb.median)
    if sa.n < min_readings or sb.n < min_readings:
        return Judgement(sa, sb, r, pct, None, "not enough data")
    p = mann_whitney_p(a, b)
    assert sa.median is not None and sb.median is not None and p is not None
    verdict = direction(sa.median, sb.median, better, p < alpha, min_effect_pct)
    if load and verdict in ("improved", "regressed"):
        verdict = "changed"
    return Judgement(sa, sb, r, pct, p, verdict)


def direction(a: float, b: float, better: Better, significant: bool,
              min_effect_pct: float = MIN_EFFECT_PCT) -> VerdictKind:
    """improved / regressed when significant and past the effect gate, else no change."""
    if not significant or effect_pct(a, b) < min_effect_pct or a == b:
        return "no change"
    up = b > a
    return "improved" if up == (better == "higher") else "regressed"


def p_text(p: float | None) -> str:
    if p is None:
        return "p n/a"
    if p < 0.001:
        return "p < 0.001"
    return f"p = {p:.3f}" if p < 0.1 else f"p = {p:.2f}"
