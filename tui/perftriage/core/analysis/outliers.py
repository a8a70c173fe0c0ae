"""Robust outliers: the median and the MAD, not the mean and the standard deviation.

For one metric over the fleet, every value ``x`` gets the *robust distance*

    d(x) = |x - median| / MAD,   MAD = median(|x_i - median|)

(the raw MAD, not scaled by 1.4826: the distance reads "how many typical
deviations away"). The mean and standard deviation are useless here: one
hung GPU at 0 % drags the mean and inflates the deviation so much that it
hides itself; the median and MAD ignore up to half the fleet being odd.

**MAD = 0** (more than half the fleet reports the very same value, e.g. 8
idle GPUs at 0 % and one busy one) makes the formula divide by zero. The
rule, so that no NaN or infinity ever reaches a table or JSON:

1. the scale falls back to the *mean* absolute deviation from the median
   (the fallback Iglewicz and Hoaglin give for the modified z-score); it is
   positive whenever any value differs from the median;
2. when that is 0 too (every value identical) every distance is 0.0 and the
   metric has no outliers.

A value is an *outlier* when its distance exceeds the threshold
(:data:`DEFAULT_THRESHOLD` = 5, about a modified z-score of 3.4) and the
metric has at least :data:`MIN_VALUES` values (with fewer, "the fleet" is
not a population). Non-finite input values (NaN from an exporter) are
dropped before anything is computed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DEFAULT_THRESHOLD = 5.0
MIN_VALUES = 3


@dataclass(frozen=True)
class RobustStats:
    median: float
    mad: float
    scale: float  # what distances divide by: the MAD, or the fallback (0: all equal)
    count: int

    def distance(self, value: float) -> float:
        """|value - median| / scale; 0.0 when every value was identical."""
        if self.scale <= 0.0:
            return 0.0
        return abs(value - self.median) / self.scale


def finite(values: Iterable[float]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def robust_stats(values: Iterable[float]) -> RobustStats | None:
    """Median, MAD and the distance scale of ``values``; None when none is finite."""
    xs = finite(values)
    if not xs:
        return None
    med = statistics.median(xs)
    deviations = [abs(x - med) for x in xs]
    mad = statistics.median(deviations)
    scale = mad if mad > 0.0 else math.fsum(deviations) / len(deviations)
    return RobustStats(median=med, mad=mad, scale=scale, count=len(xs))


def outlier_indexes(values: Sequence[float], stats: RobustStats | None,
                    threshold: float = DEFAULT_THRESHOLD) -> list[tuple[int, float]]:
    """(index, distance) of the values past ``threshold``, largest distance first."""
    if stats is None or stats.count < MIN_VALUES or stats.scale <= 0.0:
        return []
    found = []
    median, scale = stats.median, stats.scale  # stats.distance, inline: 24k values a refresh
    for i, v in enumerate(values):
        if v is None:
            continue
        d = abs(v - median) / scale  # NaN for a NaN: never past the threshold
        if d > threshold and math.isfinite(v):
            found.append((i, d))
    found.sort(key=lambda item: -item[1])
    return found
