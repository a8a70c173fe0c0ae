"""Interval arithmetic on one device's kernels: busy time (the union of the
kernel intervals, so kernels overlapping on several streams count once) and
exposed communication (communication time no other kernel overlaps)."""

from __future__ import annotations

from bisect import bisect_right


def union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Sorted, merged, non-overlapping intervals covering the same time."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def length(merged: list[tuple[float, float]]) -> float:
    return sum(end - start for start, end in merged)


def exposed(comm: list[tuple[float, float]], others: list[tuple[float, float]]) -> float:
    """Time covered by ``comm`` and by none of ``others``."""
    comm_u = union(comm)
    cover = union(others)
    starts = [s for s, _ in cover]
    total = 0.0
    for start, end in comm_u:
        hidden = 0.0
        i = max(bisect_right(starts, start) - 1, 0)
        while i < len(cover) and cover[i][0] < end:
            lo, hi = max(start, cover[i][0]), min(end, cover[i][1])
            if hi > lo:
                hidden += hi - lo
            i += 1
        total += (end - start) - hidden
    return total


class DeviceTimeline:
    """Kernel intervals of one device of one rank, split by communication."""

    __slots__ = ("comm", "others")

    def __init__(self) -> None:
        self.comm: list[tuple[float, float]] = []
        self.others: list[tuple[float, float]] = []

    def first(self) -> float:
        return min(s for s, _ in self.comm + self.others) if self.comm or self.others else 0.0

    def last(self) -> float:
        return max(e for _, e in self.comm + self.others) if self.comm or self.others else 0.0

    def window(self) -> float:
        spans = self.comm + self.others
        if not spans:
            return 0.0
        return max(e for _, e in spans) - min(s for s, _ in spans)

    def busy(self) -> float:
        return length(union(self.comm + self.others))

    def exposed_comm(self) -> float:
        return exposed(self.comm, self.others) if self.comm else 0.0
