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


class BucketShare(msgspec.Struct, frozen=True):
    bucket: str
    total_ms: float
    pct: float


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


class RankRow(msgspec.Struct, frozen=True):
    rank: str
    file: str
    window_ms: float | None
    kernel_ms: float
    idle_pct: float | None
    exposed_comm_ms: float | None


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
