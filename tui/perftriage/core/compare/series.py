"""The readings of one metric on one host (or GPU), in time order: what a
:class:`~perftriage.core.compare.recording.Recording` keeps per series, and
how a slice reads them (per second: the median of each whole second)."""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

MAX_READING = 1e12  # a reading beyond ±this (or not finite) is skipped and counted


def _fine(values: array) -> bool:
    """Every value finite and within ±:data:`MAX_READING` (C loops: the usual batch)."""
    return (not values or (-MAX_READING <= min(values) and max(values) <= MAX_READING
                           and math.isfinite(sum(values))))


@dataclass
class Series:
    """Readings of one metric on one host (or GPU), in time order.

    Fed in any order: readings out of time order are appended and the series
    sorted once when next read (:attr:`t`, :attr:`v`, :meth:`between`), never
    inserted one by one (quadratic on a file written backwards). A reading
    that arithmetic cannot hold (1.7e308, inf, nan) is skipped and counted
    in :attr:`skipped`."""

    _t: array = field(default_factory=lambda: array("d"))
    _v: array = field(default_factory=lambda: array("d"))
    skipped: int = 0  # readings not finite or beyond ±MAX_READING
    _unsorted: bool = False

    @property
    def t(self) -> array:
        if self._unsorted:
            self._sort()
        return self._t

    @property
    def v(self) -> array:
        if self._unsorted:
            self._sort()
        return self._v

    def _sort(self) -> None:
        """In time order; readings at one time in the order they came (a stable sort)."""
        t, v = self._t, self._v
        order = sorted(range(len(t)), key=t.__getitem__)
        self._t = array("d", map(t.__getitem__, order))
        self._v = array("d", map(v.__getitem__, order))
        self._unsorted = False

    def _appended(self, t0: float | None, times: list[float],
                  ordered: bool | None = None) -> None:
        """``times`` appended after a series ending at ``t0``: still in time
        order? (``ordered``: whether ``times`` are, when the caller knows.)"""
        if ordered is None:
            ordered = len(times) < 2 or times == sorted(times)
        if (t0 is not None and times[0] < t0) or not ordered:
            self._unsorted = True

    def extend(self, t: float, values) -> None:
        """Readings all taken at ``t`` (a log batch's lines)."""
        last = self._t[-1] if self._t else None
        n = len(self._v)
        self._v.extend(values)
        if not _fine(self._v[n:]):
            kept = [x for x in self._v[n:] if -MAX_READING <= x <= MAX_READING]
            self.skipped += len(self._v) - n - len(kept)
            del self._v[n:]
            self._v.extend(kept)
        if len(self._v) > n:
            self._t.extend([t] * (len(self._v) - n))
            if last is not None and t < last:
                self._unsorted = True

    def extend_at(self, times: list[float], values, bounded: bool = False,
                  ordered: bool | None = None) -> None:
        """Readings at ``times``, one each (ascending, the usual case, or not);
        ``bounded``: every value is known finite and within ±MAX_READING (a
        parse that cannot read more digits), so none is checked; ``ordered``:
        whether ``times`` ascend, when the caller knows (several series of
        the same times)."""
        last = self._t[-1] if self._t else None
        n = len(self._v)
        self._v.extend(values)
        if not bounded and not _fine(self._v[n:]):
            kept = [(t, x) for t, x in zip(times, self._v[n:]) if -MAX_READING <= x <= MAX_READING]
            self.skipped += len(self._v) - n - len(kept)
            del self._v[n:]
            self._v.extend(x for _, x in kept)
            times = [t for t, _ in kept]
        if times:
            self._t.extend(times)
            self._appended(last, times, ordered)  # (kept readings keep their order)

    def add(self, t: float, value: float) -> None:
        if not -MAX_READING <= value <= MAX_READING:  # nan fails both
            self.skipped += 1
            return
        if self._t and t < self._t[-1]:  # out of order (a clock step): sorted when read
            self._unsorted = True
        self._t.append(t)
        self._v.append(value)

    def between(self, start: float, end: float) -> tuple[array, array]:
        a, b = bisect_left(self.t, start), bisect_right(self.t, end)
        return self.t[a:b], self.v[a:b]

    def per_second(self, start: float, end: float) -> tuple[list[float], list[float]]:
        """(second, median) of each whole session second in [start, end] with readings."""
        ts, vs = self.between(start, end)
        out_t: list[float] = []
        out_v: list[float] = []
        if not ts:
            return out_t, out_v
        seconds = list(map(int, ts))
        if len(set(seconds)) == len(seconds):  # one reading a second (the usual): as they are
            return list(map(float, seconds)), list(vs)
        i, n = 0, len(ts)
        while i < n:
            sec = int(ts[i])
            j = i + 1
            while j < n and int(ts[j]) == sec:
                j += 1
            out_t.append(float(sec))
            out_v.append(vs[i] if j == i + 1 else _median(vs[i:j]))
            i = j
        return out_t, out_v


def _median(values) -> float:
    """statistics.median of a second's few readings, without its checks (a
    200k-event triage called it ~100k times)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
