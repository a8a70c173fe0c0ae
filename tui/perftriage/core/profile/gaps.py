"""How long the GPU's idle gaps are, and what the host did in the long ones.

Launch overhead and a host stall both leave the GPU waiting for the host,
but they look different on the timeline: launch overhead is many short gaps
(each about one launch, microseconds), a stall is a few long ones (a
DataLoader batch, a cuDNN warm-up, a Python stall of milliseconds). So the
device's idle time (the gaps in the union of its kernels over all streams:
what GPU idle counts) is split by gap length into :data:`GAP_RANGES`, and
each gap of at least :data:`LONG_GAP_US` is kept with

- whether the host was late for it (the launch call of the kernel that ends
  it started after the gap began: host wait, as in :mod:`.idle`);
- the CPU op that spans it: of the ops (``cpu_op``, ``user_annotation``;
  Python functions only where no op does) that cover at least half of the
  gap, the shortest (the innermost: ``enumerate(DataLoader)#...__next__``
  rather than the ``ProfilerStep#3`` around it, which is never named).

Times here are the trace's own microseconds; a gap's ``start`` is reported
from the trace's first kernel (absolute starts differ between PyTorch
versions: Unix-epoch microseconds before ~2.3, else relative to
``baseTimeNanoseconds``).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field

# (label, lower bound µs inclusive, upper bound µs exclusive)
GAP_RANGES: tuple[tuple[str, float, float], ...] = (
    ("<100us", 0.0, 100.0),
    ("100us-1ms", 100.0, 1_000.0),
    ("1-10ms", 1_000.0, 10_000.0),
    (">10ms", 10_000.0, float("inf")),
)
LONG_GAP_US = 1_000.0  # a gap this long is no launch: launch-bound never counts it
KEEP_GAPS = 200  # long gaps kept per rank (the longest)
# a gap that ends this close after the first graph launch call began is "before
# the first replay" (the replay's own kernels start after its call)
WARMUP_SLACK_US = 1_000.0
SPAN_SHARE = 0.5  # an op names a gap when it covers at least this share of it
# ops never named for a gap: they span the whole step
_NEVER = ("ProfilerStep#",)
# Kineto's categories of a CPU op, and of a Python function (with_stack=True)
_OPS = frozenset({"cpu_op", "Operator", "user_annotation"})
_PY = frozenset({"python_function"})


@dataclass
class Gap:
    start: float  # µs, the trace's own time
    dur: float  # µs
    host_wait: bool  # the kernel after it was launched after it began
    first_replay: bool = False  # it ends at (or just before) the trace's first graph replay
    op: str | None = None


@dataclass
class GapParts:
    """One rank's idle split by gap length: per range, (gaps, idle µs, host-wait µs)."""

    counts: list[int] = field(default_factory=lambda: [0] * len(GAP_RANGES))
    idle_us: list[float] = field(default_factory=lambda: [0.0] * len(GAP_RANGES))
    host_us: list[float] = field(default_factory=lambda: [0.0] * len(GAP_RANGES))
    long: list[Gap] = field(default_factory=list)

    def add(self, other: "GapParts") -> None:
        for i in range(len(GAP_RANGES)):
            self.counts[i] += other.counts[i]
            self.idle_us[i] += other.idle_us[i]
            self.host_us[i] += other.host_us[i]
        self.long.extend(other.long)


def range_of(dur: float) -> int:
    for i, (_, lo, hi) in enumerate(GAP_RANGES):
        if lo <= dur < hi:
            return i
    return len(GAP_RANGES) - 1


# a kernel's (start, end, correlation or -1)
Kernel = tuple[float, float, int]


def device_gaps(merged: list[tuple[float, float]], kernels: list[Kernel],
                launches: dict[int, tuple], first_graph_ts: float | None,
                parts: GapParts) -> None:
    """Add one device's gaps to ``parts``: ``merged`` is the union of its
    kernel intervals (sorted), ``kernels`` its kernels sorted by start with
    their correlation, ``launches`` a correlation's launch call (start,
    duration, ...), ``first_graph_ts`` the start of the trace's first graph
    launch call.

    The host was late for a short gap when the next kernel's launch call
    started after the gap began (HTA's host wait); for a long gap only when
    the call ended in the gap's second half: a kernel launched early that
    waits 463 ms on another stream's event is not the host's stall, a first
    launch that loads its code object for 6.5 ms is."""
    j, n = 0, len(kernels)
    counts, idle_us, host_us = parts.counts, parts.idle_us, parts.host_us
    for (_, prev_end), (nxt, _) in zip(merged, merged[1:]):
        gap = nxt - prev_end
        if gap <= 0:
            continue
        i = 0 if gap < 100.0 else range_of(gap)
        counts[i] += 1
        idle_us[i] += gap
        # the kernels that start the busy stretch after the gap (any stream): one
        # walk over the kernels sorted by start, as the gaps come in order
        while j < n and kernels[j][0] < nxt:
            j += 1
        k = j
        long = gap >= LONG_GAP_US
        late_after = prev_end + gap / 2 if long else prev_end
        late = False
        first_replay = False
        while k < n and kernels[k][0] == nxt:
            call = launches.get(kernels[k][2])
            if call is not None and (call[0] + call[1] if long else call[0]) > late_after:
                late = True
            k += 1
        if late:
            host_us[i] += gap
        if long:
            first_replay = first_graph_ts is not None and prev_end < first_graph_ts \
                and nxt <= first_graph_ts + WARMUP_SLACK_US
            parts.long.append(Gap(prev_end, gap, late, first_replay))
    if len(parts.long) > KEEP_GAPS:
        parts.long.sort(key=lambda g: -g.dur)
        del parts.long[KEEP_GAPS:]


def name_spanning_ops(gaps: list[Gap], events: Iterable) -> None:
    """Each gap's spanning op (see the module's docstring), from one pass over
    the trace's events (``ph``, ``cat``, ``name``, ``ts``, ``dur``)."""
    if not gaps:
        return
    gaps.sort(key=lambda g: g.start)
    starts = [g.start for g in gaps]
    shortest = min(g.dur for g in gaps) * SPAN_SHARE
    longest = max(g.dur for g in gaps)
    # per gap: best (is python, dur, name)
    best: list[tuple[bool, float, str] | None] = [None] * len(gaps)
    for ev in events:
        dur = ev.dur
        if dur < shortest or ev.ph != "X":
            continue
        cat = ev.cat
        py = cat in _PY
        if not py and cat not in _OPS:
            continue
        name = ev.name
        if name.startswith(_NEVER):
            continue
        ts = ev.ts
        end = ts + dur
        # gaps that start before this op ends and end after it starts
        hi = bisect_left(starts, end)
        for k in range(hi - 1, -1, -1):
            g = gaps[k]
            if g.start + g.dur <= ts:
                if g.start + longest <= ts:
                    break  # no earlier gap reaches this op
                continue
            cover = min(end, g.start + g.dur) - max(ts, g.start)
            if cover >= SPAN_SHARE * g.dur:
                cand = (py, dur, name)
                now = best[k]
                if now is None or cand < now:
                    best[k] = cand
    for g, b in zip(gaps, best):
        g.op = None if b is None else b[2]
