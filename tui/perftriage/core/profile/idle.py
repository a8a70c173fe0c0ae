"""Why the GPU idles, from the trace: each gap between two kernels on a CUDA
stream is *host wait*, *kernel wait* or *other*, and the launch calls' delays.

The definitions are those of Holistic Trace Analysis (HTA, the anchor;
facebookresearch/HolisticTraceAnalysis at f4d0062):

- per stream, kernels sorted by start; a gap is a kernel's start minus the
  previous kernel's end (``hta/analyzers/breakdown_analysis.py`` lines
  765-773, ``_analyze_idle_time_for_stream``); the first kernel has no gap;
- *host wait*: the kernel's launch call (the CPU event with the same
  ``correlation``: ``cudaLaunchKernel``, ``cuLaunchKernelEx``,
  ``cudaGraphLaunch``, ``cudaMemcpyAsync``, ...) started after the previous
  kernel ended: the CPU was late (lines 778-786);
- *kernel wait*: not host wait and the gap is shorter than
  ``consecutive_kernel_delay`` (HTA's default 30, ``hta/trace_analysis.py``
  line 586; its docstring says nanoseconds but the gaps it is compared with
  are the trace's microseconds): the cost of back-to-back launches (lines 788-800);
- *other*: the rest: the kernel was queued already and still waited (behind
  a sync, an event from another stream, ...) (line 776, the default);
- a kernel whose launch call is not in the trace is never host wait (HTA's
  join leaves its launch time empty, lines 858-867). HTA joins with any CPU
  event of the same correlation id; here only CUDA calls that put work on a
  stream (a name holding Launch, Memcpy or Memset: :func:`launch_kind`) are
  kept — the only ones whose correlation a kernel shares, and a quarter of
  a trace's runtime events, so the breakdown costs less.

Launch statistics follow HTA's ``get_cuda_kernel_launch_stats``
(``hta/analyzers/cuda_kernel_analysis.py`` lines 536-620): the delay of a
launch is the kernel's start minus the end of its launch call, clipped at 0;
only one-kernel launches count (a graph launch's many kernels do not).

Where this differs from HTA (``docs/profile.md`` says the same):

- HTA rounds every event to whole microseconds first (start up, end down;
  ``hta/common/trace_parser.py`` lines 371-388); the times here stay as the
  trace has them, so a share can differ by a fraction of a point;
- a gap of zero or less (kernels that touch or overlap on one stream after
  that rounding) is no idle time here; HTA sums it into kernel wait;
- the driver's ``cuLaunchKernel``/``cuLaunchKernelEx`` (Triton, CUTLASS)
  count as launch calls for the launch statistics; HTA's list has only the
  runtime's ``cudaLaunchKernel``/``cudaLaunchKernelExC`` and the async
  memcpy/memset (the idle breakdown matches any CPU event, as HTA does);
- a short kernel is one that ran for less time than its launch call took,
  without HTA's extra 50 µs cap on the call.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

# HTA's TraceAnalysis.get_idle_time_breakdown(consecutive_kernel_delay=30)
KERNEL_WAIT_US = 30.0
# after a blocking sync, the host's relaunch (the value's conversion, the next
# launch): up to this much of a gap is the sync's, the rest the host's own
# (a 6 ms Python stall right after a read-back is a stall). ~110 µs measured
# on the H200 (hostsync-TP-0); 300 leaves room for a slower host
SYNC_RELAUNCH_US = 300.0

# launch calls that start exactly one kernel, memcpy or memset
SINGLE_LAUNCHES = frozenset({
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync",
    "cuLaunchKernel", "cuLaunchKernelEx",
    # ROCm (HIP): one kernel each; hipGraphLaunch is the graph launch (many)
    "hipLaunchKernel", "hipExtLaunchKernel", "hipExtModuleLaunchKernel", "hipModuleLaunchKernel",
    "hipMemcpyAsync", "hipMemsetAsync",
})


@dataclass
class IdleParts:
    """Idle time of one capture, in µs, by cause; launch delays (µs) and the
    count of kernels shorter than their launch call."""

    host_us: float = 0.0
    kernel_us: float = 0.0
    other_us: float = 0.0
    delays: list[float] = field(default_factory=list)
    short_kernels: int = 0
    # host wait that followed a blocking sync call (cudaStreamSynchronize, ...):
    # the CPU waited for the GPU to drain, then was late with the next launch
    after_sync_us: float = 0.0
    sync_calls: int = 0
    sync_us: float = 0.0  # CPU time inside those calls

    @property
    def total_us(self) -> float:
        return self.host_us + self.kernel_us + self.other_us

    def add(self, other: "IdleParts") -> None:
        self.host_us += other.host_us
        self.kernel_us += other.kernel_us
        self.other_us += other.other_us
        self.delays.extend(other.delays)
        self.short_kernels += other.short_kernels
        self.after_sync_us += other.after_sync_us
        self.sync_calls += other.sync_calls
        self.sync_us += other.sync_us


# words in the name of every CUDA call that puts work on a stream (cudaLaunchKernel,
# cuLaunchKernelEx, cudaGraphLaunch, cudaMemcpyAsync, cudaMemsetAsync, ...)
_STREAM_WORK = ("Launch", "Memcpy", "Memset")


NO_WORK, ONE_KERNEL, MANY_KERNELS = 0, 1, 2


def launch_kind(name: str) -> int:
    """Whether a CUDA call starts one kernel (``ONE_KERNEL``), maybe many
    (``MANY_KERNELS``: a graph launch), or none (``NO_WORK``: an attribute
    query, an event record, ...). HTA joins a kernel with whatever CPU event
    shares its correlation id; only calls that put work on a stream ever do,
    so the others are not kept."""
    if name in SINGLE_LAUNCHES:
        return ONE_KERNEL
    return MANY_KERNELS if any(w in name for w in _STREAM_WORK) else NO_WORK


# a kernel on a stream: (start µs, end µs, correlation id or -1)
Kernel = tuple[float, float, int]
# a launch call: (start µs, duration µs, starts exactly one kernel, its index
# in the trace's events: what launched the kernel, core/profile/launchers.py)
Launch = tuple[float, float, bool, int]


def is_sync_call(name: str) -> bool:
    """A CUDA call that blocks the CPU until the GPU is done
    (``cudaStreamSynchronize``, ``cudaDeviceSynchronize``, ``cuEventSynchronize``)."""
    return name.endswith("Synchronize")


def breakdown(streams: dict[tuple, list[Kernel]], launches: dict[int, Launch],
              kernel_wait_us: float = KERNEL_WAIT_US,
              syncs: list[tuple[float, float]] | None = None) -> IdleParts:
    """The idle parts of one rank: ``streams`` maps (device, stream) to its
    kernels, ``launches`` a correlation id to its launch call, ``syncs`` the
    blocking sync calls as (start, end) µs.

    *After a sync* (part of host wait): a blocking sync (a value read back)
    drains the GPU's queue, and the host must launch again from empty. The
    gap that holds the sync's end counts up to the sync's end plus
    :data:`SYNC_RELAUNCH_US` (what the host does longer than that is its own
    stall, not the sync's); the host-wait gaps after it count too until the
    host is ahead again (a kernel launched before the previous one ended):
    the queue refilling. A host that never gets ahead (launch-bound anyway)
    is charged only the first gap. Measured on the H200 (hostsync-TP-0): the
    reads cost 30.7 % of a step by ablation; the first gaps alone gave 6 %."""
    parts = IdleParts()
    sync_ends = sorted(end for _, end in syncs or ())
    if syncs:
        parts.sync_calls = len(syncs)
        parts.sync_us = sum(end - start for start, end in syncs)
    seen_single: set[int] = set()
    for kernels in streams.values():
        kernels.sort()
        prev_end: float | None = None
        refill: list[float] = []  # host-wait since a sync, while the host is not ahead again
        for start, end, corr in kernels:
            launch = launches.get(corr) if corr >= 0 else None
            if prev_end is not None and start > prev_end:
                gap = start - prev_end
                if launch is not None and launch[0] > prev_end:
                    parts.host_us += gap
                    sync_end = _last_between(sync_ends, prev_end, start) if sync_ends else None
                    if sync_end is not None:
                        parts.after_sync_us += refill[0] if refill else 0.0  # never caught up
                        refill = [min(gap, sync_end - prev_end + SYNC_RELAUNCH_US)]
                    elif refill:
                        refill.append(min(gap, SYNC_RELAUNCH_US))
                elif gap < kernel_wait_us:
                    parts.kernel_us += gap
                else:
                    parts.other_us += gap
            if refill and launch is not None and prev_end is not None and launch[0] <= prev_end:
                parts.after_sync_us += sum(refill)  # the host is ahead again: the refill ends
                refill = []
            if launch is not None and launch[2] and corr not in seen_single:
                seen_single.add(corr)
                call_start, call_dur = launch[0], launch[1]
                parts.delays.append(max(0.0, start - call_start - call_dur))
                if end - start < call_dur:
                    parts.short_kernels += 1
            if prev_end is None or end > prev_end:
                prev_end = end
        if refill:
            parts.after_sync_us += refill[0]
    return parts


def _last_between(sorted_values: list[float], lo: float, hi: float) -> float | None:
    """The largest value in ``[lo, hi]``, or None."""
    i = bisect_right(sorted_values, hi) - 1
    return sorted_values[i] if i >= 0 and sorted_values[i] >= lo else None


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of sorted values."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-len(sorted_values) * q // 100))  # ceil(n * q / 100)
    return sorted_values[int(rank) - 1]
