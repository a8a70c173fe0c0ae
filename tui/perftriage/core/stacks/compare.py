"""Two stacks samples side by side (``d`` in the Stacks view): which
functions grew or shrank as the top of the stack. Shares of all the
processes' samples together, by function name and file: two samples rarely
hold the same number of samples, or the same pids after a restart."""

from __future__ import annotations

from dataclasses import dataclass

from perftriage.core.stacks.summary import StacksSummary

CHANGED_PTS = 1.0  # a self share that moved by at least this many points is a change


@dataclass(frozen=True)
class FrameChange:
    name: str
    file: str
    before_pct: float
    after_pct: float

    @property
    def delta(self) -> float:
        return self.after_pct - self.before_pct


def self_shares(s: StacksSummary) -> dict[tuple[str, str], float]:
    """(name, file) -> its self samples over all the sample's samples, in percent."""
    total = sum(p.samples for p in s.processes)
    out: dict[tuple[str, str], float] = {}
    for p in s.processes:
        for f in p.frames:
            out[(f.name, f.file)] = out.get((f.name, f.file), 0.0) + f.self_samples
    return {k: round(100.0 * v / total, 2) if total else 0.0 for k, v in out.items()}


def compare(before: StacksSummary, after: StacksSummary,
            threshold: float = CHANGED_PTS) -> tuple[list[FrameChange], list[FrameChange]]:
    """(grew, shrank): functions whose self share moved by ``threshold``
    points or more, the largest move first."""
    a, b = self_shares(before), self_shares(after)
    moved = [FrameChange(k[0], k[1], a.get(k, 0.0), b.get(k, 0.0)) for k in dict.fromkeys([*a, *b])]
    moved = [c for c in moved if abs(c.delta) >= threshold]
    grew = sorted((c for c in moved if c.delta > 0), key=lambda c: -c.delta)
    shrank = sorted((c for c in moved if c.delta < 0), key=lambda c: c.delta)
    return grew, shrank


def baseline(kinds: list[str], i: int) -> tuple[int, bool] | None:
    """Which sample the ``i``-th of samples of these ``kinds`` compares with:
    the newest earlier one of the same kind, ``(j, True)``; else the one just
    before, ``(i - 1, False)`` (differing in kind: the caller says so); None
    for the first."""
    if i <= 0:
        return None
    same = next((j for j in range(i - 1, -1, -1) if kinds[j] == kinds[i]), None)
    return (same, True) if same is not None else (i - 1, False)
