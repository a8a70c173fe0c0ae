"""The summary of one capture: what ``perftriage trace --json`` prints, what a
``profile.captured`` event carries, what the Profile view shows.

Field order is the public JSON shape: ``files, ranks, window_ms, kernel_ms,
idle_pct, exposed_comm_ms, buckets, kernels`` first, extras after. Times are
summed over ranks; ``pct`` is a share of ``kernel_ms`` in percent. Values a
source cannot give (an nsys kernel summary has no timeline, so no window and
no idle share) are ``None``.
"""

from __future__ import annotations

import msgspec

from perftriage.core.shares import bound


class BucketShare(msgspec.Struct, frozen=True):
    bucket: str
    total_ms: float
    pct: float

    def __post_init__(self) -> None:
        bound(self, "pct")


class LaunchOp(msgspec.Struct, frozen=True):
    """Who launched some of a kernel's calls: the CPU op open around the
    launch (``aten::mm``; None when the trace records none, as under CUDA-graph
    replay) and the CUDA call (``cudaLaunchKernel``, ``cudaGraphLaunch``; None
    when the call is not in the trace)."""

    op: str | None
    call: str | None
    calls: int


class KernelRow(msgspec.Struct, frozen=True):
    name: str
    bucket: str
    total_ms: float
    calls: int
    avg_us: float
    pct: float
    # this kernel's total per rank, in the order of ProfileSummary.rank_labels
    rank_ms: list[float] = []
    # (max - min) / mean of rank_ms, in percent; 0 with one rank
    spread_pct: float = 0.0
    # one call's duration, nearest-rank percentiles over every call on every
    # rank; None where the source has no per-call times (nsys summaries)
    p50_us: float | None = None
    p99_us: float | None = None
    # the CPU op that launched most of its calls (None: none recorded), and
    # the biggest launchers (up to three, most calls first); empty for nsys
    cpu_op: str | None = None
    launched_by: list[LaunchOp] = []

    def __post_init__(self) -> None:
        bound(self, "pct")


class RankRow(msgspec.Struct, frozen=True):
    rank: str
    file: str
    window_ms: float | None
    kernel_ms: float
    idle_pct: float | None
    exposed_comm_ms: float | None
    # what the trace says of itself (distributedInfo, deviceProperties); None: it does not
    world_size: int | None = None
    backend: str | None = None
    process_groups: int | None = None
    device: str | None = None

    def __post_init__(self) -> None:
        bound(self, optional=("idle_pct",))


class GapRange(msgspec.Struct, frozen=True):
    """The device's idle gaps of one length range (``<100us``, ``100us-1ms``,
    ``1-10ms``, ``>10ms``), over ranks: how many, their idle time, its share
    of all idle time, and the part the host was late for (host wait)."""

    range: str
    gaps: int
    idle_ms: float
    pct: float
    host_ms: float = 0.0

    def __post_init__(self) -> None:
        bound(self, "pct")


class LongGap(msgspec.Struct, frozen=True):
    """One idle gap of 1 ms or more: ``start`` in ms from its rank's first
    kernel, and the CPU op that spans it (None: no op covers half of it)."""

    start: float
    dur_ms: float
    op: str | None
    rank: str = ""
    host_wait: bool = False


class IdleBreakdown(msgspec.Struct, frozen=True):
    """Why the GPU idled (``core/profile/idle.py``): shares of the idle time
    between kernels on each stream, summed over streams and ranks."""

    host_wait_pct: float
    kernel_wait_pct: float
    other_pct: float
    idle_ms: float = 0.0  # the stream gaps the shares are of
    # host wait right after a blocking sync call (a share of idle, like the others;
    # part of host_wait_pct), the sync calls and the CPU time spent in them
    after_sync_pct: float = 0.0
    sync_calls: int = 0
    sync_ms: float = 0.0

    def __post_init__(self) -> None:
        bound(self, "host_wait_pct", "kernel_wait_pct", "other_pct", "after_sync_pct")


class LaunchStats(msgspec.Struct, frozen=True):
    """Launch calls that start one kernel: kernel start minus the call's end
    (µs, clipped at 0), and the kernels that ran shorter than their call."""

    delay_us_p50: float
    delay_us_p99: float
    short_kernels: int
    launches: int = 0


class ProfileSummary(msgspec.Struct, frozen=True):
    files: list[str]
    ranks: int
    window_ms: float | None
    kernel_ms: float
    idle_pct: float | None
    exposed_comm_ms: float | None
    buckets: list[BucketShare]
    kernels: list[KernelRow]
    rank_labels: list[str] = []
    per_rank: list[RankRow] = []
    source: str = "kineto"  # kineto | nsys
    idle_breakdown: IdleBreakdown | None = None  # None: no stream gaps (nsys, one kernel)
    launch: LaunchStats | None = None  # None: no one-kernel launch call in the trace
    # the device idle (the union over streams, what idle_pct counts) by gap length,
    # and the longest gaps (1 ms or more) with the op that spans each
    idle_by_gap_length: list[GapRange] = []
    long_gaps: list[LongGap] = []
    # CUDA/HIP calls that put work on a stream, over ranks (0: the trace has no
    # CPU side, activities=[CUDA] only); None where the source has none (nsys)
    launch_calls: int | None = None
    # why this trace is warm-up rather than a step (graphs being captured, one
    # long gap before the first replay); None: a run
    warmup: str | None = None
    workload: str | None = None  # "training" (backward, optimizer ops) | "inference"
    engine: str | None = None  # "sglang" | "vllm" where the trace names it

    def __post_init__(self) -> None:
        bound(self, optional=("idle_pct",))

    def top(self, n: int | None) -> "ProfileSummary":
        """The same summary with only the ``n`` biggest kernels (None: all)."""
        if n is None or n >= len(self.kernels):
            return self
        return msgspec.structs.replace(self, kernels=self.kernels[:n])

    def bucket_pct(self, bucket: str) -> float:
        return next((b.pct for b in self.buckets if b.bucket == bucket), 0.0)


class TraceError(Exception):
    """A trace file that cannot be read: missing, truncated, not a trace."""

    def __init__(self, path: str, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"{path}: {reason}")


class JobError(TraceError):
    """Files that cannot be ranks of one job: the reason names each file
    (``path`` holds them all, comma-separated), so the message is the reason."""

    def __init__(self, paths: list[str], reason: str) -> None:
        super().__init__(", ".join(paths), reason)
        Exception.__init__(self, reason)
