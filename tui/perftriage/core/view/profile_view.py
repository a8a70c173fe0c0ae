"""What the Profile view, the evidence picker and the report say about a
capture, without Textual: the headline, the bucket bar's segments, the rank
spread rows and the evidence lines ("moe runs `fused_moe_kernel`, 41 % of
kernel time")."""

from __future__ import annotations

from dataclasses import dataclass

from perftriage.core.model.events import ProfileCaptured
from perftriage.core.profile.model import ProfileSummary
from perftriage.core.profile.table import short_name


def figure_text(v: float | None, fmt: str, unit: str = "") -> str:
    """``v`` in ``fmt`` with its unit; ``n/a`` for no figure."""
    return "n/a" if v is None else f"{v:{fmt}}{unit}"


def headline(cap: ProfileCaptured) -> str:
    """``prof1 on gpu-a · sglang · 8 rank(s) · 5 steps · kernel 41.0 ms/rank
    (8.20 ms/step) · GPU idle 12.0 % · exposed comm 1.20 ms``."""
    s = cap.summary
    parts = [f"{cap.capture_id} on {cap.host}", f"{cap.engine or 'trace'}",
             f"{s.ranks} rank(s)"]
    if cap.steps:
        parts.append(f"{cap.steps} steps")
    per_rank = s.kernel_ms / max(1, s.ranks)  # summed over ranks in the summary
    kernel = f"kernel {per_rank:.1f} ms" + ("/rank" if s.ranks > 1 else "")
    if cap.steps:
        kernel += f" ({per_rank / cap.steps:.2f} ms/step)"
    parts += [kernel, f"GPU idle {figure_text(s.idle_pct, '.1f', ' %')}",
              f"exposed comm {figure_text(s.exposed_comm_ms, '.2f', ' ms')}"]
    if cap.missing:
        parts.append("no trace from " + ", ".join(cap.missing))
    return " · ".join(parts)


def top_kernel_line(s: ProfileSummary, index: int = 0) -> str | None:
    """``moe runs `fused_moe_kernel`, 41 % of kernel time``."""
    if index >= len(s.kernels):
        return None
    k = s.kernels[index]
    return f"{k.bucket} runs `{short_name(k.name, 80)}`, {k.pct:.0f} % of kernel time"


def evidence_lines(cap: ProfileCaptured, kernels: int = 3) -> list[tuple[str, str]]:
    """(ref_id, text) candidates: the capture's buckets and idle share, then
    its biggest kernels one by one."""
    s = cap.summary
    buckets = ", ".join(f"{b.bucket} {b.pct:.0f} %" for b in s.buckets[:4])
    idle = f"; GPU idle {s.idle_pct:.0f} % of the window" if s.idle_pct is not None else ""
    out = [(cap.capture_id, f"{cap.capture_id} ({cap.host}): {buckets}{idle}")]
    for i in range(min(kernels, len(s.kernels))):
        line = top_kernel_line(s, i)
        if line:
            out.append((f"{cap.capture_id}:k{i + 1}", f"{cap.capture_id}: {line}"))
    return out


@dataclass(frozen=True)
class Segment:
    bucket: str
    cells: int
    pct: float


def bar_segments(s: ProfileSummary, width: int) -> list[Segment]:
    """The bucket bar: each bucket's share in whole cells (largest remainder,
    so the cells add up to ``width``; a bucket under half a cell gets none).
    Shares that add up to more than 100 (a crafted recording's) are scaled to
    fit: the bar never runs past ``width``."""
    if not s.buckets or width <= 0:
        return []
    whole = max(100.0, sum(b.pct for b in s.buckets))
    exact = [(b.bucket, b.pct * width / whole, b.pct) for b in s.buckets]
    cells = [int(x) for _, x, _ in exact]
    order = sorted(range(len(exact)), key=lambda i: -(exact[i][1] - cells[i]))
    for i in order[: max(width - sum(cells), 0)]:
        cells[i] += 1
    return [Segment(b, c, pct) for (b, _, pct), c in zip(exact, cells) if c > 0]


def spread_rows(s: ProfileSummary, kernels: int = 5) -> list[tuple[str, list[float], float]]:
    """(kernel, ms per rank, spread %) of the biggest kernels, for more than one rank."""
    if s.ranks < 2:
        return []
    return [(short_name(k.name, 50), k.rank_ms, k.spread_pct) for k in s.kernels[:kernels]]
