"""Two profile captures per step: step time, kernel time, idle, exposed
communication, per-bucket and per-kernel ms per step.

A capture covers ``steps`` forward steps (``profile.captured``'s
``steps``): step time is each rank's window ÷ steps, kernel figures are
summed over ranks, so they are divided by ranks × steps. Kernels are matched
by name, then by bucket: a Triton ``fused_moe_kernel`` replaced by a cutedsl
kernel reads as the MoE bucket's kernel going from 0.83 to 0.21 ms/step, not
as one vanished and one appeared. A capture averages its steps (there are no
per-second readings to test): the effect gate alone decides the verdicts, and
a bucket or kernel that moved by less than :data:`NOISE_SHARE` of the step
reads ``no change`` (memcpy going from 0.002 to 0.003 ms of a 4 ms step is
noise, however large its ratio) — the one floor the Profile view, the CLI
``compare`` and the report all use.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Any

from perftriage.core.compare.stats import MIN_EFFECT_PCT, direction, ratio
from perftriage.core.model.events import ProfileCaptured
from perftriage.core.profile.model import ProfileSummary


NOISE_SHARE = 0.02  # a bucket or kernel that moved by less than this share of the step


@dataclass(frozen=True)
class Figure:
    name: str
    a: float | None
    b: float | None
    verdict: str
    bucket: str = ""
    change: str = ""  # kernels: same / changed / replaced / appeared / vanished

    @property
    def ratio(self) -> float | None:
        return ratio(self.a, self.b)

    def speedup_text(self) -> str:
        """``4.0× faster`` / ``1.3× slower`` / ``unchanged`` (lower is better)."""
        if self.a is None or self.b is None or self.verdict == "no change" \
                or self.a <= 0 or self.b <= 0:
            return "unchanged" if self.verdict == "no change" else self.change or "?"
        if self.b < self.a:
            return f"{self.a / self.b:.1f}× faster"
        return f"{self.b / self.a:.1f}× slower"

    def to_json(self, *, kernel: bool = False, bucket: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if kernel:
            out["name"] = self.name
        if kernel or bucket:
            out["bucket"] = self.bucket
        out.update(a=self.a, b=self.b, ratio=self.ratio, verdict=self.verdict)
        if kernel:
            out["change"] = self.change
        return out


@dataclass(frozen=True)
class ProfileDiff:
    a_id: str
    b_id: str
    per: str  # "step" or "capture" (a capture without a step count)
    step_ms: Figure
    kernel_ms: Figure
    idle_pct: Figure
    exposed_comm_ms: Figure
    buckets: list[Figure]
    kernels: list[Figure]
    # each rank's window ÷ steps, by rank label (step_ms is their median)
    step_ms_per_rank: dict[str, dict[str, float]] | None = None
    # a bucket or kernel that moved by less reads "no change" (ms per step or capture)
    noise_ms: float = 0.0
    ranks: tuple[int, int] = (1, 1)

    def warnings(self) -> list[str]:
        """Why the two captures compare less well (each sentence a warning)."""
        ra, rb = self.ranks
        if ra == rb:
            return []
        return [f"profiles of different rank counts ({self.a_id} {ra}, {self.b_id} {rb}): "
                "the work per rank differs"]

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a_id, "b": self.b_id, "per": self.per,
            "step_ms": self.step_ms.to_json(), "kernel_ms": self.kernel_ms.to_json(),
            "idle_pct": self.idle_pct.to_json(),
            "exposed_comm_ms": self.exposed_comm_ms.to_json(),
            "buckets": [f.to_json(bucket=True) for f in self.buckets],
            "kernels": [f.to_json(kernel=True) for f in self.kernels],
            "step_ms_per_rank": self.step_ms_per_rank,
            "noise_ms": self.noise_ms, "ranks": list(self.ranks),
        }


def _verdict(a: float | None, b: float | None, min_effect: float, noise_ms: float = 0.0) -> str:
    if a is None or b is None:
        return "not enough data"
    if abs(b - a) < noise_ms:
        return "no change"
    return direction(a, b, "lower", True, min_effect)


def _fig(name: str, a: float | None, b: float | None, min_effect: float,
         noise_ms: float = 0.0, **kw) -> Figure:
    return Figure(name, a, b, _verdict(a, b, min_effect, noise_ms), **kw)


def noise_floor(step: Figure, kernel: Figure) -> float:
    """:data:`NOISE_SHARE` of the longer step (of the kernel time per step or
    per capture without a step time)."""
    ref = step if step.a is not None and step.b is not None else kernel
    return NOISE_SHARE * max(ref.a or 0.0, ref.b or 0.0)


def step_ms(summary: ProfileSummary, steps: int | None) -> float | None:
    """The median over ranks of window ÷ steps (None without a window or steps)."""
    windows = [r.window_ms for r in summary.per_rank if r.window_ms is not None]
    if not windows and summary.window_ms is not None:
        windows = [summary.window_ms / max(1, summary.ranks)]
    if not windows or not steps:
        return None
    return median(windows) / steps


def rank_steps(summary: ProfileSummary, steps: int | None) -> dict[str, float]:
    """Each rank's window ÷ steps (ms), by rank label."""
    if not steps:
        return {}
    return {r.rank: r.window_ms / steps for r in summary.per_rank if r.window_ms is not None}


def diff(a: ProfileCaptured, b: ProfileCaptured,
         min_effect: float = MIN_EFFECT_PCT) -> ProfileDiff:
    sa, sb = a.summary, b.summary
    both_steps = bool(a.steps) and bool(b.steps)
    da = max(1, sa.ranks) * (a.steps if both_steps and a.steps else 1)
    db = max(1, sb.ranks) * (b.steps if both_steps and b.steps else 1)

    def per(x: float | None, d: int) -> float | None:
        return None if x is None else x / d

    step = _fig("step", step_ms(sa, a.steps), step_ms(sb, b.steps), min_effect)
    kernel = _fig("kernel", sa.kernel_ms / da, sb.kernel_ms / db, min_effect)
    noise = noise_floor(step, kernel)
    buckets_a = {s.bucket: s.total_ms / da for s in sa.buckets}
    buckets_b = {s.bucket: s.total_ms / db for s in sb.buckets}
    buckets = [_fig(name, buckets_a.get(name, 0.0), buckets_b.get(name, 0.0), min_effect,
                    noise, bucket=name)
               for name in dict.fromkeys([*buckets_a, *buckets_b])]
    buckets.sort(key=lambda f: -abs((f.b or 0.0) - (f.a or 0.0)))
    return ProfileDiff(
        a_id=a.capture_id, b_id=b.capture_id, per="step" if both_steps else "capture",
        step_ms=step, kernel_ms=kernel,
        idle_pct=_fig("idle", sa.idle_pct, sb.idle_pct, min_effect),
        exposed_comm_ms=_fig("exposed communication", per(sa.exposed_comm_ms, da),
                             per(sb.exposed_comm_ms, db), min_effect),
        buckets=buckets, kernels=_kernels(sa, sb, da, db, min_effect, noise),
        step_ms_per_rank={"a": rank_steps(sa, a.steps), "b": rank_steps(sb, b.steps)},
        noise_ms=noise, ranks=(max(1, sa.ranks), max(1, sb.ranks)))


def _kernels(sa: ProfileSummary, sb: ProfileSummary, da: int, db: int,
             min_effect: float, noise: float) -> list[Figure]:
    ka = {k.name: (k.bucket, k.total_ms / da) for k in sa.kernels}
    kb = {k.name: (k.bucket, k.total_ms / db) for k in sb.kernels}
    out: list[Figure] = []
    for name in ka.keys() & kb.keys():
        f = _fig(name, ka[name][1], kb[name][1], min_effect, noise, bucket=kb[name][0])
        out.append(Figure(f.name, f.a, f.b, f.verdict, f.bucket,
                          "same" if f.verdict == "no change" else "changed"))
    # unmatched names, by bucket: what replaced what
    gone: dict[str, list[str]] = {}
    new: dict[str, list[str]] = {}
    for name, (bucket, _) in ka.items():
        if name not in kb:
            gone.setdefault(bucket, []).append(name)
    for name, (bucket, _) in kb.items():
        if name not in ka:
            new.setdefault(bucket, []).append(name)
    for bucket in dict.fromkeys([*gone, *new]):
        old_names, new_names = gone.get(bucket, []), new.get(bucket, [])
        if old_names and new_names:
            ms_a = sum(ka[n][1] for n in old_names)
            ms_b = sum(kb[n][1] for n in new_names)
            label = f"{_names(old_names)} → {_names(new_names)}"
            f = _fig(label, ms_a, ms_b, min_effect, noise, bucket=bucket)
            out.append(Figure(f.name, f.a, f.b, f.verdict, bucket, "replaced"))
            continue
        for n in old_names:
            quiet = ka[n][1] < noise
            out.append(Figure(n, ka[n][1], 0.0, "no change" if quiet else "improved", bucket,
                              "vanished"))
        for n in new_names:
            quiet = kb[n][1] < noise
            out.append(Figure(n, 0.0, kb[n][1], "no change" if quiet else "regressed", bucket,
                              "appeared"))
    out.sort(key=lambda f: -abs((f.b or 0.0) - (f.a or 0.0)))
    return out


def _names(names: list[str], shown: int = 2) -> str:
    short = [n if len(n) <= 48 else n[:47] + "…" for n in names[:shown]]
    more = f" +{len(names) - shown}" if len(names) > shown else ""
    return ", ".join(short) + more


# Two captures the same within noise (the report shows the later one as "= the
# earlier"): re-capturing one steady server moves GPU idle by a point or so and
# a kernel's share by less (the two eager ranks of tests/fixtures/profile, one
# loop on one H200: idle 85.2 and 84.6 %, step 3.91 and 3.75 ms, every top
# kernel's share within 0.2 points and time within 3 %); a real change moves more.
SAME_IDLE_PTS = 2.0  # GPU idle within this many points
SAME_SHARE_PTS = 2.0  # each top kernel's share of kernel time within this many points
SAME_TIME_PCT = 5.0  # step time, kernel time and each top kernel's time (per step) within this
SAME_TOP = 10  # the top kernels of either capture that must agree (the report's table)


def _close(a: float | None, b: float | None, pct: float = SAME_TIME_PCT) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= pct / 100.0 * max(abs(a), abs(b))


def within_noise(a: ProfileCaptured, b: ProfileCaptured, top: int = SAME_TOP) -> bool:
    """Whether ``b`` says what ``a`` says: the same rank count, GPU idle within
    :data:`SAME_IDLE_PTS` points, step and kernel time per step within
    :data:`SAME_TIME_PCT` %, and the top ``top`` kernels of each found in both,
    each with its share within :data:`SAME_SHARE_PTS` points and its time per
    step within :data:`SAME_TIME_PCT` %."""
    sa, sb = a.summary, b.summary
    if max(1, sa.ranks) != max(1, sb.ranks) or not sa.kernels or not sb.kernels:
        return False
    if (sa.idle_pct is None) != (sb.idle_pct is None) or (
            sa.idle_pct is not None and sb.idle_pct is not None
            and abs(sa.idle_pct - sb.idle_pct) > SAME_IDLE_PTS):
        return False
    d = diff(a, b)
    if not _close(d.step_ms.a, d.step_ms.b) or not _close(d.kernel_ms.a, d.kernel_ms.b):
        return False
    per_step = {f.name: f for f in d.kernels if f.change in ("same", "changed")}
    ka = {k.name: k for k in sa.kernels}
    kb = {k.name: k for k in sb.kernels}
    for name in dict.fromkeys([k.name for k in sa.kernels[:top]] +
                              [k.name for k in sb.kernels[:top]]):
        x, y, f = ka.get(name), kb.get(name), per_step.get(name)
        if x is None or y is None or f is None:
            return False  # a top kernel of one is not in the other
        if abs(x.pct - y.pct) > SAME_SHARE_PTS or not _close(f.a, f.b):
            return False
    return True
