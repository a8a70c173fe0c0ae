"""Two stacks samples side by side (``d`` in the Stacks view): which
functions grew or shrank as the top of the stack. Shares of all the
processes' samples together (a record's: the busy ones), by function name
and file: two samples rarely hold the same number of samples, or the same
pids after a restart.

A change is called only past the noise floor: a two-proportion z-test on
the sample counts (a function's self samples of each sample's total).
41.7 % of 24 samples against 47.4 % of 19 is noise (z 0.4); 0 % of 40
against 88 % of 160 is not."""

from __future__ import annotations

import math
from dataclasses import dataclass

from perftriage.core.stacks.summary import StacksSummary

CHANGED_PTS = 1.0  # a self share that moved by less than this many points is no change
Z_CRITICAL = 1.96  # |z| past this: a change (two-sided, 95 %)


@dataclass(frozen=True)
class FrameChange:
    name: str
    file: str
    before_pct: float
    after_pct: float
    before_n: int = 0  # its self samples in each
    after_n: int = 0
    before_total: int = 0  # all the samples of each
    after_total: int = 0

    @property
    def delta(self) -> float:
        return self.after_pct - self.before_pct

    @property
    def z(self) -> float:
        return two_proportion_z(self.before_n, self.before_total, self.after_n, self.after_total)

    @property
    def significant(self) -> bool:
        return abs(self.z) >= Z_CRITICAL


def two_proportion_z(x1: int, n1: int, x2: int, n2: int) -> float:
    """z of the difference between x2/n2 and x1/n1 (pooled); 0 where either
    sample is empty or the pooled share is 0 or 1 (no spread: no evidence)."""
    if n1 <= 0 or n2 <= 0:
        return 0.0
    pooled = (x1 + x2) / (n1 + n2)
    spread = pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2)
    if spread <= 0.0:
        return 0.0
    return (x2 / n2 - x1 / n1) / math.sqrt(spread)


def self_counts(s: StacksSummary) -> tuple[dict[tuple[str, str], int], int]:
    """(name, file) -> its self samples over all the sample's processes, and their total."""
    total = sum(p.samples for p in s.processes)
    out: dict[tuple[str, str], int] = {}
    for p in s.processes:
        for f in p.frames:
            out[(f.name, f.file)] = out.get((f.name, f.file), 0) + f.self_samples
    return out, total


def self_shares(s: StacksSummary) -> dict[tuple[str, str], float]:
    """(name, file) -> its self samples over all the sample's samples, in percent."""
    counts, total = self_counts(s)
    return {k: round(100.0 * v / total, 2) if total else 0.0 for k, v in counts.items()}


def moves(before: StacksSummary, after: StacksSummary,
          threshold: float = CHANGED_PTS) -> list[FrameChange]:
    """Every function whose self share moved by ``threshold`` points or more,
    noise or not (``FrameChange.significant`` says which), the largest move first."""
    (a, na), (b, nb) = self_counts(before), self_counts(after)
    out = []
    for k in dict.fromkeys([*a, *b]):
        x1, x2 = a.get(k, 0), b.get(k, 0)
        c = FrameChange(k[0], k[1], round(100.0 * x1 / na, 2) if na else 0.0,
                        round(100.0 * x2 / nb, 2) if nb else 0.0, x1, x2, na, nb)
        if abs(c.delta) >= threshold:
            out.append(c)
    out.sort(key=lambda c: -abs(c.delta))
    return out


def compare(before: StacksSummary, after: StacksSummary,
            threshold: float = CHANGED_PTS) -> tuple[list[FrameChange], list[FrameChange]]:
    """(grew, shrank): functions whose self share moved by ``threshold``
    points or more and past the noise floor, the largest move first."""
    moved = [c for c in moves(before, after, threshold) if c.significant]
    grew = sorted((c for c in moved if c.delta > 0), key=lambda c: -c.delta)
    shrank = sorted((c for c in moved if c.delta < 0), key=lambda c: c.delta)
    return grew, shrank


def noise(before: StacksSummary, after: StacksSummary,
          threshold: float = CHANGED_PTS) -> list[FrameChange]:
    """The moves of ``threshold`` points or more that the sample counts cannot
    tell from noise, the largest first."""
    return [c for c in moves(before, after, threshold) if not c.significant]


def baseline(kinds: list[str], i: int) -> tuple[int, bool] | None:
    """Which sample the ``i``-th of samples of these ``kinds`` compares with:
    the newest earlier one of the same kind, ``(j, True)``; else the one just
    before, ``(i - 1, False)`` (differing in kind: the caller says so); None
    for the first."""
    if i <= 0:
        return None
    same = next((j for j in range(i - 1, -1, -1) if kinds[j] == kinds[i]), None)
    return (same, True) if same is not None else (i - 1, False)
