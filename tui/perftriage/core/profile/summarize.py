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
from perftriage.core.profile.gaps import GAP_RANGES, GapParts
from perftriage.core.profile.model import (
    BucketShare,
    GapRange,
    IdleBreakdown,
    JobError,
    KernelRow,
    LaunchOp,
    LaunchStats,
    LongGap,
    ProfileSummary,
    RankRow,
    TraceError,
)
from perftriage.core.profile.rank import RankData, rank_label
from perftriage.core.profile.reader import TraceLimits, check_objects, cut_name, read_trace_bytes
from perftriage.core.profile.trace_meta import RankFacts, absolute_us, job_problem

LONG_GAPS_SHOWN = 20  # long gaps a summary lists (the longest)
WARMUP_GAP_US = 100_000.0  # one gap this long before the first graph replay: warm-up


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


def idle_of(ranks: list[RankData],
            device_idle_us: float | None = None) -> tuple[IdleBreakdown | None, LaunchStats | None]:
    """The idle breakdown and launch statistics of all ranks together. The
    shares are of the stream gaps (HTA's breakdown, per stream); ``idle_ms``
    is the device idle, the union over streams (``device_idle_us``), so it is
    never above the window: a per-stream sum once read 24,867 ms of idle in a
    12,920 ms window."""
    parts = IdleParts()
    for r in ranks:
        if r.idle is not None:
            parts.add(r.idle)
    total = parts.total_us
    shown = total if device_idle_us is None else device_idle_us
    idle = None if total <= 0 else IdleBreakdown(
        host_wait_pct=_pct(parts.host_us, total), kernel_wait_pct=_pct(parts.kernel_us, total),
        other_pct=_pct(parts.other_us, total), idle_ms=round(shown / 1000.0, 4),
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


def gaps_of(ranks: list[RankData], labels: list[str]) -> tuple[list[GapRange], list[LongGap]]:
    """The idle by gap length over ranks and the longest gaps (start in ms
    from each rank's first kernel)."""
    parts = GapParts()
    longs: list[LongGap] = []
    for r, label in zip(ranks, labels):
        if r.gaps is None:
            continue
        parts.add(r.gaps)
        origin = min((tl.first() for tl in (r.devices or {}).values()), default=0.0)
        longs += [LongGap(start=round((g.start - origin) / 1000.0, 4),
                          dur_ms=round(g.dur / 1000.0, 4),
                          op=None if g.op is None else cut_name(g.op), rank=label,
                          host_wait=g.host_wait) for g in r.gaps.long]
    total = sum(parts.idle_us)
    if not any(r.gaps is not None for r in ranks):
        return [], []
    table = [GapRange(range=label, gaps=parts.counts[i], idle_ms=round(parts.idle_us[i] / 1000, 4),
                      pct=_pct(parts.idle_us[i], total), host_ms=round(parts.host_us[i] / 1000, 4))
             for i, (label, _, _) in enumerate(GAP_RANGES)]
    longs.sort(key=lambda g: (-g.dur_ms, g.rank, g.start))
    return table, longs[:LONG_GAPS_SHOWN]


def warmup_of(ranks: list[RankData]) -> str | None:
    """Why the capture is warm-up and no step: graphs being captured, or a
    single gap of hundreds of ms before the first graph replay."""
    captures = sum(r.graph_captures for r in ranks)
    if captures:
        return (f"graphs were being captured ({captures} capture/instantiate calls: "
                "cudaStreamBeginCapture, cudaGraphInstantiate, hip…): warm-up, not the "
                "steady state")
    for r in ranks:
        big = [g for g in (r.gaps.long if r.gaps else []) if g.dur >= WARMUP_GAP_US]
        if len(big) == 1 and big[0].first_replay:
            return (f"one {big[0].dur / 1000:.0f} ms gap before the first graph replay: "
                    "warm-up, not the steady state")
    return None


def labels_of(ranks: list[RankData]) -> list[str]:
    """Each rank's label: its rank in the job (``rank7``, from distributedInfo)
    where the trace is a rank of a distributed job (SGLang's ``TP-7`` where
    the file's name says the same rank), else ``TP-r`` from the file name,
    else its place in the arguments; two files that both say TP-0 (two
    captures) stay apart."""
    labels: list[str] = []
    for r in ranks:
        m = r.meta
        label = r.label
        if m is not None and m.distributed and label != f"TP-{m.rank}":
            label = f"rank{m.rank}"  # SGLang's TP-r where it agrees with the trace
        labels.append(label if label not in labels else f"{label}#{len(labels)}")
    return labels


def summarize(ranks: list[RankData], classifier: Classifier) -> ProfileSummary:
    if ranks and all(r.meta is not None and r.meta.distributed for r in ranks):
        ranks = sorted(ranks, key=lambda r: r.meta.rank if r.meta and r.meta.rank else 0)
    labels = labels_of(ranks)
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
        m = r.meta
        rows.append(RankRow(
            rank=labels[i], file=r.file,
            window_ms=None if window is None else round(window / 1000.0, 4),
            kernel_ms=round(kernel_us / 1000.0, 4),
            idle_pct=None if window is None or busy is None else _pct(window - busy, window),
            exposed_comm_ms=None if exposed is None else round(exposed / 1000.0, 4),
            world_size=m.world_size if m else None, backend=m.backend if m else None,
            process_groups=m.process_groups if m else None, device=m.device if m else None))
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
    idle, launch = idle_of(ranks, idle_sum if timeline and ranks else None)
    by_length, long_gaps = gaps_of(ranks, labels)
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
        source="kineto" if timeline else "nsys", idle_breakdown=idle, launch=launch,
        idle_by_gap_length=by_length, long_gaps=long_gaps,
        launch_calls=sum(r.launch_calls for r in ranks) if timeline else None,
        warmup=warmup_of(ranks) if timeline else None,
        workload=("training" if any(r.training for r in ranks) else "inference")
        if timeline else None,
        engine=next((r.engine for r in ranks if r.engine), None))


def summarize_files(paths: Sequence[str | Path],
                    user_rules: list[tuple[str, str]] | None = None,
                    limits: TraceLimits = TraceLimits()) -> ProfileSummary:
    """Read and summarise trace files (one per rank); :class:`TraceError` names
    the first file that cannot be read or holds no GPU kernel."""
    classifier = Classifier(user_rules)
    ranks = [read_file(p, i, classifier, limits) for i, p in enumerate(paths)]
    for r in ranks:
        if not r.kernels and r.mtia_events:
            raise TraceError(r.file, f"an MTIA trace ({r.mtia_events} MTIA device events): no "
                                     "CUDA/HIP kernels; not supported")
        if not r.kernels:
            raise TraceError(r.file, "holds no GPU kernels: is it a CPU-only trace? (profile "
                                     "with activities CPU and CUDA)")
    problem = job_problem([RankFacts(r.file, r.meta, _window(r)) for r in ranks])
    if problem is not None:
        raise JobError([r.file for r in ranks], problem)
    return summarize(ranks, classifier)


def _window(r: RankData) -> tuple[float, float] | None:
    """The rank's kernel window in Unix-epoch µs, where the trace says its time base."""
    if not r.devices:
        return None
    first = min(tl.first() for tl in r.devices.values())
    last = max(tl.last() for tl in r.devices.values())
    a, b = absolute_us(r.meta, first), absolute_us(r.meta, last)
    return None if a is None or b is None else (a, b)
