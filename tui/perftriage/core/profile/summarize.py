"""Turn trace files (one per rank) into one :class:`ProfileSummary`.

Per device, the window is first kernel start to last kernel end; idle is the
window minus the union of kernel intervals; exposed communication is
communication time no other kernel on that device overlaps. Windows, kernel
time and exposed communication are summed over ranks; ``idle_pct`` is the
summed idle over the summed window.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from perftriage.core.profile import kineto, nsys
from perftriage.core.profile.buckets import BUCKETS, Classifier
from perftriage.core.profile.idle import IdleParts, percentile
from perftriage.core.profile.launchers import TOP_LAUNCHERS, Launcher, merge_durations
from perftriage.core.profile.model import (
    BucketShare,
    IdleBreakdown,
    KernelRow,
    LaunchOp,
    LaunchStats,
    ProfileSummary,
    RankRow,
    TraceError,
)
from perftriage.core.profile.rank import RankData, rank_label
from perftriage.core.profile.reader import TraceLimits, check_objects, cut_name, read_trace_bytes


def read_file(path: str | Path, index: int, classifier: Classifier,
              limits: TraceLimits = TraceLimits()) -> RankData:
    """One file, Kineto JSON (plain or gzip) or nsys CSV by its content,
    through the bounded reader."""
    p = str(path)
    label = rank_label(p, index)
    try:
        data = read_trace_bytes(p, limits)
        if not data or data.isspace():
            raise TraceError(p, "empty file")
        if _first_byte(data) not in (b"{", b"[") and nsys.looks_like(data):
            return nsys.read(p, data, label)
        check_objects(p, data, limits)
        handed = [data]
        del data  # the reader drops the text once decoded: its bytes are not kept to the end
        return kineto.read(p, handed, label, classifier)
    except MemoryError:
        raise TraceError(p, "not enough memory to summarise it (lower [profile] "
                            "max_trace_mb / --max-trace-mb)") from None


_LEADING_SPACE = re.compile(rb"\s*")


def _first_byte(data: bytes | bytearray) -> bytes:
    """The first byte that is not white space (no copy of the text)."""
    m = _LEADING_SPACE.match(data)
    at = m.end() if m else 0
    return bytes(data[at:at + 1])


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 3) if whole > 0 else 0.0


def idle_of(ranks: list[RankData]) -> tuple[IdleBreakdown | None, LaunchStats | None]:
    """The idle breakdown and launch statistics of all ranks together."""
    parts = IdleParts()
    for r in ranks:
        if r.idle is not None:
            parts.add(r.idle)
    total = parts.total_us
    idle = None if total <= 0 else IdleBreakdown(
        host_wait_pct=_pct(parts.host_us, total), kernel_wait_pct=_pct(parts.kernel_us, total),
        other_pct=_pct(parts.other_us, total), idle_ms=round(total / 1000.0, 4),
        after_sync_pct=_pct(parts.after_sync_us, total), sync_calls=parts.sync_calls,
        sync_ms=round(parts.sync_us / 1000.0, 4))
    delays = sorted(parts.delays)
    launch = None if not delays else LaunchStats(
        delay_us_p50=round(percentile(delays, 50), 3), delay_us_p99=round(percentile(delays, 99), 3),
        short_kernels=parts.short_kernels, launches=len(delays))
    return idle, launch


def _calls_of(ranks: list[RankData], name: str) -> dict:
    """A kernel's per-call figures over all ranks: duration percentiles and
    its biggest launchers (only for sources that have them: not nsys)."""
    durations = merge_durations([d for r in ranks for d in (r.durations or {}).get(name, [])])
    who: Counter[Launcher] = Counter()
    for r in ranks:
        who.update((r.launched_by or {}).get(name, {}))
    top = [LaunchOp(op=None if op is None else cut_name(op), call=call, calls=n)
           for (op, call), n in sorted(who.items(), key=_most_calls)[:TOP_LAUNCHERS]]
    return {"p50_us": round(percentile(durations, 50), 3) if durations else None,
            "p99_us": round(percentile(durations, 99), 3) if durations else None,
            "cpu_op": top[0].op if top else None, "launched_by": top}


def _most_calls(item: tuple[Launcher, int]) -> tuple[int, str, str]:
    (op, call), n = item
    return (-n, op or "\uffff", call or "\uffff")  # ties: named launchers first


def summarize(ranks: list[RankData], classifier: Classifier) -> ProfileSummary:
    # distinct labels: two files that both say TP-0 (two captures) stay apart
    labels: list[str] = []
    for r in ranks:
        labels.append(r.label if r.label not in labels else f"{r.label}#{len(labels)}")
    per_name: dict[str, list[float]] = {}
    per_rank_ms: dict[str, list[float]] = {}
    rows: list[RankRow] = []
    timeline = all(r.devices is not None for r in ranks)
    per_call = all(r.durations is not None for r in ranks)
    win_sum = idle_sum = exposed_sum = 0.0
    for i, r in enumerate(ranks):
        kernel_us = 0.0
        for name, (total, calls) in r.kernels.items():
            acc = per_name.setdefault(name, [0.0, 0])
            acc[0] += total
            acc[1] += calls
            per_rank_ms.setdefault(name, [0.0] * len(ranks))[i] += total / 1000.0
            kernel_us += total
        window = busy = exposed = None
        if r.devices is not None:
            window = sum(tl.window() for tl in r.devices.values())
            busy = sum(tl.busy() for tl in r.devices.values())
            exposed = sum(tl.exposed_comm() for tl in r.devices.values())
            win_sum += window
            idle_sum += window - busy
            exposed_sum += exposed
        rows.append(RankRow(
            rank=labels[i], file=r.file,
            window_ms=None if window is None else round(window / 1000.0, 4),
            kernel_ms=round(kernel_us / 1000.0, 4),
            idle_pct=None if window is None or busy is None else _pct(window - busy, window),
            exposed_comm_ms=None if exposed is None else round(exposed / 1000.0, 4)))
    kernel_us = sum(v[0] for v in per_name.values())
    kernels = []
    by_bucket: dict[str, float] = {}
    for name, (total, calls) in per_name.items():
        b = classifier.bucket(name)
        by_bucket[b] = by_bucket.get(b, 0.0) + total
        spread = per_rank_ms[name]
        mean = sum(spread) / len(spread)
        kernels.append(KernelRow(
            name=name, bucket=b, total_ms=round(total / 1000.0, 6), calls=int(calls),
            avg_us=round(total / calls, 3) if calls else 0.0, pct=_pct(total, kernel_us),
            rank_ms=[round(x, 6) for x in spread],
            spread_pct=round(100.0 * (max(spread) - min(spread)) / mean, 2) if mean > 0 else 0.0,
            **(_calls_of(ranks, name) if per_call else {})))
    kernels.sort(key=lambda k: (-k.total_ms, k.name))
    order = {b: i for i, b in enumerate(BUCKETS)}
    idle, launch = idle_of(ranks)
    buckets = sorted(
        (BucketShare(bucket=b, total_ms=round(t / 1000.0, 6), pct=_pct(t, kernel_us))
         for b, t in by_bucket.items()),
        key=lambda s: (-s.total_ms, order.get(s.bucket, len(order))))
    return ProfileSummary(
        files=[r.file for r in ranks], ranks=len(ranks),
        window_ms=round(win_sum / 1000.0, 4) if timeline and ranks else None,
        kernel_ms=round(kernel_us / 1000.0, 4),
        idle_pct=_pct(idle_sum, win_sum) if timeline and ranks else None,
        exposed_comm_ms=round(exposed_sum / 1000.0, 4) if timeline and ranks else None,
        buckets=buckets, kernels=kernels, rank_labels=labels, per_rank=rows,
        source="kineto" if timeline else "nsys", idle_breakdown=idle, launch=launch)


def summarize_files(paths: Sequence[str | Path],
                    user_rules: list[tuple[str, str]] | None = None,
                    limits: TraceLimits = TraceLimits()) -> ProfileSummary:
    """Read and summarise trace files (one per rank); :class:`TraceError` names
    the first file that cannot be read or holds no GPU kernel."""
    classifier = Classifier(user_rules)
    ranks = [read_file(p, i, classifier, limits) for i, p in enumerate(paths)]
    for r in ranks:
        if not r.kernels:
            raise TraceError(r.file, "holds no GPU kernels: is it a CPU-only trace? (profile "
                                     "with activities CPU and CUDA)")
    return summarize(ranks, classifier)
