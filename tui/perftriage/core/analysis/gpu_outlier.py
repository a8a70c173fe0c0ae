"""Which GPU deviates from the others, and which way.

The robust distance the Fleet view uses (``core/analysis/outliers.py``, a layer
above this one): ``|x - median| / MAD``, the MAD falling back to the mean
absolute deviation from the median when more than half the GPUs read the
very same value. A GPU is named when it is past :data:`DISTANCE` typical
deviations *and* at least ``min_points`` away from the median (a uniform
node's noise is never an outlier), with at least :data:`MIN_GPUS` GPUs (with
two, neither is "the odd one"). A tie never picks by index: the largest
distance wins, and equal distances name nobody.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from perftriage.core.analysis.outliers import DEFAULT_THRESHOLD as DISTANCE
from perftriage.core.analysis.outliers import MIN_VALUES as MIN_GPUS
from perftriage.core.analysis.outliers import outlier_indexes, robust_stats


@dataclass(frozen=True)
class GpuOutlier:
    index: int
    value: float
    median: float  # of all the GPUs
    side: str  # "low" or "high"

    @property
    def points(self) -> float:
        return abs(self.value - self.median)


def deviating_gpu(values: Mapping[int, float], min_points: float) -> GpuOutlier | None:
    """The GPU (index -> value) that deviates from the others; None if none does."""
    indexes = list(values)
    xs = [values[i] for i in indexes]
    stats = robust_stats(xs)
    if stats is None:
        return None
    far = [(d, i) for i, d in outlier_indexes(xs, stats, DISTANCE)
           if abs(xs[i] - stats.median) >= min_points]  # largest distance first
    if not far or (len(far) > 1 and far[0][0] == far[1][0]):
        return None
    index = indexes[far[0][1]]
    med = stats.median
    value = values[index]
    return GpuOutlier(index=index, value=value, median=med, side="low" if value < med else "high")
