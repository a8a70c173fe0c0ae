"""Which GPU deviates from the others, and which way.

The robust distance the Fleet view uses (``core/fleet/outliers.py``, a layer
above this one): ``|x - median| / MAD``, the MAD falling back to the mean
absolute deviation from the median when more than half the GPUs read the
very same value. A GPU is named when it is past :data:`DISTANCE` typical
deviations *and* at least ``min_points`` away from the median (a uniform
node's noise is never an outlier), with at least :data:`MIN_GPUS` GPUs (with
two, neither is "the odd one"). A tie never picks by index: the largest
distance wins, and equal distances name nobody.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass

DISTANCE = 5.0  # the Fleet view's DEFAULT_THRESHOLD
MIN_GPUS = 3


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
    if len(values) < MIN_GPUS:
        return None
    med = statistics.median(values.values())
    deviations = {i: abs(v - med) for i, v in values.items()}
    mad = statistics.median(deviations.values())
    scale = mad if mad > 0 else sum(deviations.values()) / len(deviations)
    if scale <= 0:
        return None
    far = sorted(((d / scale, i) for i, d in deviations.items()
                  if d / scale > DISTANCE and d >= min_points), reverse=True)
    if not far or (len(far) > 1 and far[0][0] == far[1][0]):
        return None
    index = far[0][1]
    value = values[index]
    return GpuOutlier(index=index, value=value, median=med, side="low" if value < med else "high")
