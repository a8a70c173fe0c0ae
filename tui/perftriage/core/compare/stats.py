"""Medians and verdicts: is B better than A, and is the difference real?

Kayenta's judge, per metric: a two-sided Mann–Whitney U test (scipy.stats)
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
VerdictKind = Literal["improved", "regressed", "no change", "not enough data"]


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
    """Two-sided Mann–Whitney U p-value (scipy.stats; the normal
    approximation with tie correction for larger samples, exact for small
    ones without ties); 1.0 when every reading is the same; None when a side
    is empty."""
    if not a or not b:
        return None
    if min(a) == max(a) == min(b) == max(b):
        return 1.0
    from scipy.stats import mannwhitneyu  # imported when first needed: ~0.3 s

    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else p


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
          min_readings: int = MIN_READINGS) -> Judgement:
    """The verdict on one metric from the readings of A and of B."""
    sa, sb = summarize(a), summarize(b)
    r, pct = ratio(sa.median, sb.median), change_pct(sa.median, sb.median)
    if sa.n < min_readings or sb.n < min_readings:
        return Judgement(sa, sb, r, pct, None, "not enough data")
    p = mann_whitney_p(a, b)
    assert sa.median is not None and sb.median is not None and p is not None
    return Judgement(sa, sb, r, pct, p, direction(sa.median, sb.median, better,
                                                   p < alpha, min_effect_pct))


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
