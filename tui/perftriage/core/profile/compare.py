"""Two captures side by side (before/after a restart with another backend):
which kernels appeared, which vanished, whose share of kernel time changed,
and how each bucket moved. Shares, not milliseconds: two captures rarely
cover the same number of steps."""

from __future__ import annotations

from dataclasses import dataclass

from perftriage.core.profile.model import KernelRow, ProfileSummary

CHANGED_PTS = 1.0  # a share that moved by at least this many points is "changed"


@dataclass(frozen=True)
class KernelChange:
    name: str
    bucket: str
    before_pct: float  # 0 when it appeared
    after_pct: float  # 0 when it vanished

    @property
    def delta(self) -> float:
        return self.after_pct - self.before_pct


@dataclass(frozen=True)
class Comparison:
    appeared: list[KernelChange]  # biggest share first
    vanished: list[KernelChange]
    changed: list[KernelChange]  # largest move first
    buckets: list[KernelChange]  # every bucket of either capture, largest move first
    idle_before: float | None
    idle_after: float | None


def compare(before: ProfileSummary, after: ProfileSummary,
            threshold: float = CHANGED_PTS) -> Comparison:
    a: dict[str, KernelRow] = {k.name: k for k in before.kernels}
    b: dict[str, KernelRow] = {k.name: k for k in after.kernels}
    appeared = [KernelChange(n, k.bucket, 0.0, k.pct) for n, k in b.items() if n not in a]
    vanished = [KernelChange(n, k.bucket, k.pct, 0.0) for n, k in a.items() if n not in b]
    changed = [KernelChange(n, k.bucket, a[n].pct, k.pct) for n, k in b.items()
               if n in a and abs(k.pct - a[n].pct) >= threshold]
    ba = {s.bucket: s.pct for s in before.buckets}
    bb = {s.bucket: s.pct for s in after.buckets}
    buckets = [KernelChange(name, name, ba.get(name, 0.0), bb.get(name, 0.0))
               for name in dict.fromkeys([*ba, *bb])]
    return Comparison(
        appeared=sorted(appeared, key=lambda c: -c.after_pct),
        vanished=sorted(vanished, key=lambda c: -c.before_pct),
        changed=sorted(changed, key=lambda c: -abs(c.delta)),
        buckets=sorted(buckets, key=lambda c: -abs(c.delta)),
        idle_before=before.idle_pct, idle_after=after.idle_pct)
