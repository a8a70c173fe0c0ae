"""What a Kineto trace says of itself: which rank of which job it is
(``distributedInfo``: ``rank``, ``world_size``, ``backend``, ``pg_config``),
on which GPU (``deviceProperties``), and when (``baseTimeNanoseconds``).

Ranks are labelled by what the trace says, never by the order of the
arguments: 8 rank files given in reverse once named the straggler ``rank0``
when it was rank 7. Files that cannot be ranks of one job are refused, each
with the files and why (:func:`job_problem`):

- one file given twice (the same file under two names: same device and
  inode; :func:`same_file`, where a person names the files);
- different world sizes, or different GPUs;
- two files that claim the same rank of a distributed job;
- ranks of a distributed job (``world_size`` > 1) whose windows never
  overlap in time (captured at different times: two jobs, or two runs).

A trace of one process (``world_size`` 1, or no ``distributedInfo``) is not
held to the time check: two such runs side by side (an eager and another
eager run as ``TP-0``/``TP-1``) are compared as two ranks, as before.

Every field is the writer's word: a value of the wrong type is ignored
(the trace is still read), never an error.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import msgspec

# Kineto writes times in µs; before ~2.3 as Unix-epoch µs, after relative to
# baseTimeNanoseconds. A first kernel after this is an epoch time (2001 on)
_EPOCH_US = 1e15


class PgConfig(msgspec.Struct, gc=False):
    pg_name: str | int | None = None
    pg_desc: str | None = None
    backend_config: str | None = None
    pg_size: int | None = None


class DistInfo(msgspec.Struct, gc=False):
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    pg_config: list[PgConfig] | None = None


class DeviceProp(msgspec.Struct, gc=False):
    id: int | str | None = None
    name: str | None = None


@dataclass(frozen=True)
class TraceMeta:
    """One file's own account of itself (None: the trace does not say)."""

    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    process_groups: int | None = None
    device: str | None = None  # the GPU's name (of the devices its kernels ran on)
    base_us: float | None = None  # baseTimeNanoseconds in µs

    @property
    def distributed(self) -> bool:
        return self.world_size is not None and self.world_size > 1 and self.rank is not None


def _lenient(raw: bytes | None, kind: type):
    if raw is None:
        return None
    try:
        return msgspec.json.decode(raw, type=kind)
    except (msgspec.DecodeError, RecursionError):
        return None


def meta_of(path: str, dist_raw: bytes | None, devices_raw: bytes | None,
            base_ns: object, kernel_pids: set) -> TraceMeta:
    dist = _lenient(dist_raw, DistInfo)
    devices = _lenient(devices_raw, list[DeviceProp]) or []
    names = {str(d.id): d.name for d in devices if d.name}
    used = sorted({names[str(p)] for p in kernel_pids if str(p) in names})
    base = base_ns if isinstance(base_ns, (int, float)) and not isinstance(base_ns, bool) else None
    rank = dist.rank if dist is not None and isinstance(dist.rank, int) and dist.rank >= 0 else None
    ws = dist.world_size if dist is not None and isinstance(dist.world_size, int) \
        and dist.world_size > 0 else None
    return TraceMeta(
        rank=rank, world_size=ws,
        backend=dist.backend if dist is not None else None,
        process_groups=len(dist.pg_config) if dist is not None and dist.pg_config else None,
        device=", ".join(used) if used else None,
        base_us=None if base is None else base / 1000.0)


def absolute_us(meta: TraceMeta | None, t: float) -> float | None:
    """A trace time as Unix-epoch µs (None when the trace does not say)."""
    if t >= _EPOCH_US:
        return t
    if meta is not None and meta.base_us is not None:
        return meta.base_us + t
    return None


@dataclass(frozen=True)
class RankFacts:
    """What the job checks need of one rank file."""

    file: str
    meta: TraceMeta | None
    window: tuple[float, float] | None  # absolute µs of its first kernel start, last end


def same_file(paths: list[str]) -> str | None:
    """Two arguments that are one file (same device and inode: a second name,
    a link), said with both names; None when each is its own. Checked where a
    person names the files (``perftriage trace``): the demo's bundled ranks
    are copies of two real traces on purpose."""
    seen: dict[tuple[int, int], str] = {}
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue  # the reader names a missing file
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return (f"{seen[key]} and {p} are the same file given twice: one rank, not two; "
                    "give each rank's file once")
        seen[key] = p
    return None


def job_problem(ranks: list[RankFacts]) -> str | None:
    """Why these files cannot be ranks of one job, naming them; None when they can."""
    if len(ranks) < 2:
        return None
    metas = [(r.file, r.meta) for r in ranks if r.meta is not None]
    for what, key in (("world sizes", lambda m: m.world_size), ("GPUs", lambda m: m.device)):
        values = {key(m) for _, m in metas if key(m) is not None}
        if len(values) > 1:
            listed = ", ".join(f"{f} ({key(m)})" for f, m in metas if key(m) is not None)
            return f"different {what}: {listed}: not ranks of one job; trace each on its own"
    dist = [r for r in ranks if r.meta is not None and r.meta.distributed]
    claimed: dict[int, str] = {}
    for r in dist:
        assert r.meta is not None and r.meta.rank is not None
        if r.meta.rank in claimed:
            return (f"{claimed[r.meta.rank]} and {r.file} both say they are rank {r.meta.rank} "
                    "of the job (distributedInfo): two captures; trace each on its own")
        claimed[r.meta.rank] = r.file
    timed = [r for r in dist if r.window is not None]
    for r in timed:
        assert r.window is not None
        if not any(o is not r and o.window is not None and o.window[0] <= r.window[1]
                   and r.window[0] <= o.window[1] for o in timed):
            return (f"{r.file}'s window never overlaps the other ranks' "
                    f"({', '.join(o.file for o in timed if o is not r)}): captured at another "
                    "time, not ranks of one capture; trace each on its own")
    return None
