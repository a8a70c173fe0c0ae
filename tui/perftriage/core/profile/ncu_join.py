"""An ncu result joined with what the engineer looks at: the Profile view's
kernels, the Gap view's "where the bandwidth goes", the ``kernel["REGEX"]``
check signals and the report.

The session's ncu result is the newest ``ncu`` probe that profiled kernels
(its ``detail["ncu"]``, an :class:`NcuSummary`). A trace and ncu name the
same kernel differently once templates are involved (Kineto
``at::native::(anonymous namespace)::foo<false>``, ncu ``at::<unnamed>::foo<0>``),
so a profile kernel takes the ncu kernel of the same name, else the one ncu
kernel with the same base name (:func:`kernel_key`) when the base name is
unique on both sides — never a guess between several.

A kernel's time share comes from the profile capture when it has that
kernel (the step as the server runs it), else from the ncu run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from perftriage.core.profile.model import KernelRow, ProfileSummary
from perftriage.core.profile.ncu_csv import kernel_key
from perftriage.core.profile.ncu import (
    MEMORY,
    NcuKernel,
    NcuSummary,
    bw_pct,
)

def latest_summary(probes: Iterable[Any]) -> tuple[str, NcuSummary] | None:
    """(probe id, summary) of the newest finished ncu probe with kernels.
    ``probes``: the session state's probes, in queue order."""
    found = None
    for p in probes:
        if p.kind != "ncu" or not isinstance(p.detail.get("ncu"), dict):
            continue
        try:
            s = msgspec.convert(p.detail["ncu"], NcuSummary)
        except msgspec.ValidationError:
            continue
        if s.kernels:
            found = (p.probe_id, s)
    return found


def match_profile(kernels: Sequence[KernelRow], ncu: NcuSummary) -> dict[str, NcuKernel]:
    """Profile kernel name -> its ncu kernel, where the join is certain."""
    exact = {k.name: k for k in ncu.kernels}
    by_key: dict[str, list[NcuKernel]] = {}
    for k in ncu.kernels:
        by_key.setdefault(kernel_key(k.name), []).append(k)
    profile_keys: dict[str, int] = {}
    for row in kernels:
        key = kernel_key(row.name)
        profile_keys[key] = profile_keys.get(key, 0) + 1
    out: dict[str, NcuKernel] = {}
    for row in kernels:
        hit = exact.get(row.name)
        if hit is None:
            key = kernel_key(row.name)
            same = by_key.get(key, [])
            if len(same) == 1 and profile_keys[key] == 1:
                hit = same[0]
        if hit is not None:
            out[row.name] = hit
    return out


@dataclass(frozen=True)
class KernelFigures:
    """What ``kernel["REGEX"]`` reads: the matching ncu kernels together."""

    names: list[str]
    gbs: float | None  # their bytes over their time
    bw_pct: float | None  # of the peak (ncu's dram % without one), time-weighted
    time_pct: float  # share of kernel time: the profile's when it has them, else ncu's
    verdict: str  # the verdict of the one taking the most time
    time_source: str  # "profile" or "ncu"


def figures(ncu: NcuSummary, pattern: re.Pattern[str],
            profile: ProfileSummary | None = None) -> KernelFigures | None:
    hits = [k for k in ncu.kernels if pattern.search(k.name)]
    if not hits:
        return None
    done = [k for k in hits if k.gbs is not None]
    done_us = sum(k.time_us for k in done)
    gbs = sum(k.bytes for k in done) / (done_us * 1000.0) if done_us > 0 else None
    weighted = [(bw_pct(k), k.time_us) for k in done if bw_pct(k) is not None]
    wt = sum(t for _, t in weighted)
    bw = sum(b * t for b, t in weighted if b is not None) / wt if wt > 0 else None
    time_pct, source = sum(k.time_pct for k in hits), "ncu"
    if profile is not None:
        joined = match_profile(profile.kernels, ncu)
        names = {k.name for k in hits}
        rows = [r for r in profile.kernels if r.name in joined and joined[r.name].name in names]
        if rows:
            time_pct, source = sum(r.pct for r in rows), "profile"
    top = max(hits, key=lambda k: k.time_us)
    return KernelFigures(names=[k.name for k in hits],
                         gbs=None if gbs is None else round(gbs, 1),
                         bw_pct=None if bw is None else round(bw, 1),
                         time_pct=round(time_pct, 2), verdict=top.verdict, time_source=source)


@dataclass(frozen=True)
class Recoverable:
    name: str
    time_pct: float
    bw_pct: float
    recoverable_pct: float
    time_source: str  # "profile" or "ncu"


def where_bandwidth_goes(ncu: NcuSummary, profile: ProfileSummary | None = None,
                         n: int = 3) -> list[Recoverable]:
    """The memory-bound kernels furthest below their roofline weighted by
    their share of kernel time, largest recoverable share first."""
    joined = match_profile(profile.kernels, ncu) if profile is not None else {}
    share = {k.name: (row.pct, "profile") for row in (profile.kernels if profile else [])
             if (k := joined.get(row.name)) is not None}
    out = []
    for k in ncu.kernels:
        bw = bw_pct(k)
        if k.verdict != MEMORY or bw is None:
            continue
        pct, source = share.get(k.name, (k.time_pct, "ncu"))
        out.append(Recoverable(k.name, pct, bw, pct * (1.0 - min(bw, 100.0) / 100.0), source))
    out.sort(key=lambda r: (-r.recoverable_pct, r.name))
    return out[:n]


def recoverable_text(r: Recoverable, first: bool) -> str:
    """``fused_moe_kernel: 22 % of kernel time at 49 % of peak: the largest
    recoverable share (≈ 11 % of the step)`` (the step: the profile capture's;
    without one, of the profiled kernel time)."""
    from perftriage.core.profile.table import short_name

    what = "the largest recoverable share" if first else "recoverable"
    of, whole = ("kernel time", "the step") if r.time_source == "profile" \
        else ("the profiled kernel time", "the profiled kernel time")
    return (f"{short_name(r.name, 60)}: {r.time_pct:.0f} % of {of} at {r.bw_pct:.0f} % of "
            f"peak: {what} (≈ {r.recoverable_pct:.1f} % of {whole})")


def bandwidth_lines(probes: Iterable[Any], profiles: Sequence[Any]) -> tuple[str, list[str]] | None:
    """The Gap view's and the report's "where the bandwidth goes": (the ncu
    probe's id, one line per kernel furthest below its roofline), or None
    without an ncu result. ``profiles``: the session's captures (the newest
    gives the time shares)."""
    got = latest_summary(probes)
    if got is None:
        return None
    probe_id, summary = got
    rows = where_bandwidth_goes(summary, profiles[-1].summary if profiles else None)
    if not rows:
        return probe_id, ["no kernel is memory-bound below its roofline"]
    return probe_id, [recoverable_text(r, i == 0) for i, r in enumerate(rows)]


def probe_line(summary: str, ncu: NcuSummary | None, profiles: Sequence[Any]) -> str:
    """An ncu probe's one line, its "furthest below roofline" share taken from
    the newest capture of the session when it holds the kernel (the share of
    the step), and saying which share it is; else the probe's own line."""
    if ncu is None or not profiles:
        return summary
    rows = where_bandwidth_goes(ncu, profiles[-1].summary, 1)
    if not rows or rows[0].time_source != "profile":
        return summary
    r = rows[0]
    from perftriage.core.profile.table import short_name

    head = summary.split("; furthest below roofline:", 1)[0]
    return (f"{head}; furthest below roofline: {short_name(r.name, 40)} {r.time_pct:.1f} % of "
            f"the step at {r.bw_pct:.0f} % of peak (≈ {r.recoverable_pct:.1f} % of the step "
            f"recoverable, shares from {profiles[-1].capture_id})")
