"""Which CPU op launched a kernel, and how long its calls took one by one.

A Kineto trace joins the two sides by ids, not by nesting:

- a kernel's ``args.correlation`` is the ``correlation`` of the CUDA call
  that put it on a stream (``cudaLaunchKernel``, ``cuLaunchKernelEx``,
  ``cudaGraphLaunch``, ``cudaMemcpyAsync``, ...);
- that call's ``args["External id"]`` is the ``External id`` of the
  innermost CPU op open on the thread when it ran (torch pushes an op's id on
  entry and pops it on exit), so ``aten::_fused_rms_norm`` rather than the
  ``aten::rms_norm`` around it: the op that launched the kernel.

Under CUDA-graph replay the kernels share the ``cudaGraphLaunch``'s
correlation and that call often has no ``External id``: the launcher is then
the graph launch itself, with no op (the graph was captured once, the ops
that recorded it are not in this trace). A kernel whose launch call is not in
the trace (the profiler dropped it) has neither.

The reader keeps, per kernel name, each call's duration and correlation (8
bytes each: the summary's p50/p99 are exact nearest-rank percentiles over all
ranks), each launch call's event index and the op names by External id; the
join runs once the whole trace is read (a kernel may come before its launch
call in the file).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from perftriage.core.profile.idle import Launch

# Kineto's categories of a CPU op (older Kineto: ``Operator``); a
# ``record_function`` range (user_annotation) is an op too when nothing
# narrower is open around the launch
OP_CATS = frozenset({"cpu_op", "Operator", "user_annotation"})

# (CPU op or None, CUDA call or None): who launched a kernel
Launcher = tuple[str | None, str | None]
NOT_IN_TRACE: Launcher = (None, None)

# how many launchers a kernel row keeps (the rest is the calls not listed)
TOP_LAUNCHERS = 3

# the largest correlation an array('q') holds; a bigger one joins nothing
MAX_ID = 2**63 - 1


class _Args(Protocol):
    @property
    def external_id(self) -> int | str | None: ...


class _Event(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def args(self) -> _Args | None: ...


def launcher_ids(events: Sequence[_Event], launches: dict[int, Launch],
                 ops: dict[int, str]) -> tuple[dict[int, int], list[Launcher]]:
    """Correlation id -> a launcher's number in the list returned with it,
    for every launch call the reader kept; ``ops`` maps an External id to its
    op's name. Launchers are numbered so counting a kernel's calls hashes
    small ints, not (op, call) pairs."""
    ids: dict[int, int] = {}
    numbers: dict[Launcher, int] = {}
    for corr, launch in launches.items():
        ev = events[launch[3]]
        ext = None if ev.args is None else ev.args.external_id
        who = (ops.get(ext) if type(ext) is int else None, ev.name)
        ids[corr] = numbers.setdefault(who, len(numbers))
    return ids, list(numbers)  # (dicts keep insertion order: a launcher's number is its place)


def count_launchers(corrs: array, ids: dict[int, int], table: list[Launcher]) -> Counter[Launcher]:
    """How many of a kernel's calls (their correlations) each launcher made;
    a call whose launch is not in the trace counts as :data:`NOT_IN_TRACE`."""
    out: Counter[Launcher] = Counter()
    for n, calls in Counter(map(ids.get, corrs)).items():
        out[NOT_IN_TRACE if n is None else table[n]] += calls
    return out


def merge_durations(parts: list[array]) -> list[float]:
    """All calls' durations of one kernel over ranks, sorted."""
    merged: list[float] = []
    for p in parts:
        merged.extend(p)
    merged.sort()
    return merged
