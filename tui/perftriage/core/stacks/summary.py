"""Samples -> what the ``stacks`` probe answers: per process its threads,
its top frames by self share (the function on top of the stack) and by
inclusive share (anywhere on it), its idle and GIL shares, and its hottest
stacks whole; the top frame over all processes.

Field order is the public JSON shape (``perftriage probe stacks --json``):
``pid, name, samples, idle_pct, gil_pct, threads, frames`` per process and
``name, file, line, self_pct, total_pct`` per frame, extras after.

Shares: a frame's ``self_pct``/``total_pct`` are of the process's samples
(a record's: the busy ones; :func:`wall_pct` is a frame's share of wall time).
A frame is a function (name and file); its ``line`` is the line most of its
samples were on. ``record`` without ``--idle`` gets only the samples py-spy
judged active, so a thread's idle share is what is missing of the ticks
(rate × seconds): ``100 × (1 − samples / ticks)``; a process's ``idle_pct``
is its busiest thread's (an engine's scheduler loop), ``gil_pct`` (with
``--gil``, which records only GIL-holding samples) its samples over the
ticks. A ``dump`` is one sample per thread: ``idle_pct`` and ``gil_pct`` are
shares of its threads, and its frames include idle threads.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import msgspec

from perftriage.core.shares import bound
from perftriage.core.stacks.folded import Frame, Sample

KIND = "stacks"  # the probe kind whose detail is a StacksSummary
TOP_FRAMES = 50  # frames kept per process (the event's bound)
TOP_STACKS = 10  # whole stacks kept per process (Enter on a frame)
STACK_DEPTH = 40  # innermost frames kept of a stack
Mode = Literal["dump", "record"]


class FrameRow(msgspec.Struct, frozen=True):
    name: str
    file: str
    line: int | None
    self_pct: float
    total_pct: float
    self_samples: int = 0
    total_samples: int = 0

    def __post_init__(self) -> None:
        bound(self, "self_pct", "total_pct")


class ThreadRow(msgspec.Struct, frozen=True):
    tid: int | None
    name: str
    samples: int
    idle_pct: float | None
    gil_pct: float | None = None

    def __post_init__(self) -> None:
        bound(self, optional=("idle_pct", "gil_pct"))


class StackRow(msgspec.Struct, frozen=True):
    samples: int
    pct: float
    frames: list[str]  # "name (file:line)", root first, at most STACK_DEPTH innermost

    def __post_init__(self) -> None:
        bound(self, "pct")


class ProcessStacks(msgspec.Struct, frozen=True):
    pid: int
    name: str
    samples: int
    idle_pct: float | None
    gil_pct: float | None
    threads: list[ThreadRow]
    frames: list[FrameRow]  # by self_pct, at most TOP_FRAMES
    stacks: list[StackRow] = []  # the hottest, at most TOP_STACKS
    error: str | None = None  # py-spy could not read this process
    bad_lines: int = 0  # output lines that did not parse

    def __post_init__(self) -> None:
        bound(self, optional=("idle_pct", "gil_pct"))


class TopFrame(msgspec.Struct, frozen=True):
    name: str
    file: str
    line: int | None
    self_pct: float
    total_pct: float = 0.0
    pid: int = 0
    process: str = ""
    # when the leaf is a small helper (``_burn``): it and its callers up to the frame to act
    # on, leaf first (``["_burn", "simulated_late_rank_stall"]``); empty: the leaf says it
    chain: list[str] = []

    def __post_init__(self) -> None:
        bound(self, "self_pct", "total_pct")

    def label(self) -> str:
        """``_burn ← simulated_late_rank_stall``, or the name alone."""
        return " ← ".join(self.chain) if self.chain else self.name


class StacksSummary(msgspec.Struct, frozen=True):
    processes: list[ProcessStacks]
    top: TopFrame | None
    mode: Mode = "record"
    seconds: float | None = None
    rate: int | None = None
    native: bool = False
    gil: bool = False

    def frame(self, name: str) -> FrameRow | None:
        """The named function's row with the largest inclusive share over the processes."""
        rows = [f for p in self.processes for f in p.frames if f.name == name]
        return max(rows, key=lambda f: f.total_pct) if rows else None

    def process_of_top(self) -> ProcessStacks | None:
        if self.top is None:
            return None
        return next((p for p in self.processes if p.pid == self.top.pid), None)


def busy_share(process: ProcessStacks) -> float:
    """The share of wall time a record's samples cover, 0 to 1: py-spy records
    only the samples it judged active, so a share of them is a share of the
    busy time; the rest of the ticks (``idle_pct``, the busiest thread's) idled."""
    return max(0.0, 1.0 - (process.idle_pct or 0.0) / 100.0)


def wall_pct(frame: FrameRow | TopFrame, process: ProcessStacks) -> float:
    """A record's frame's self share of all samples (the ticks: wall time), in
    percent: its ``self_pct`` (of the busy samples) × the process's busy share.
    A frame at 42 % of the busy samples of a process idle 96 % of the time is
    1.7 % of wall time. The one definition: the Stacks view, the report and
    the triage use it (a dump's samples are threads, not time: not for one)."""
    return round(frame.self_pct * busy_share(process), 2)


def _pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole > 0 else 0.0


def _threads(samples: list[Sample], mode: Mode, ticks: int | None,
             gil: bool) -> list[ThreadRow]:
    by: dict[tuple[int | None, str], list[Sample]] = {}
    for s in samples:
        by.setdefault((s.thread_id, s.thread_name), []).append(s)
    rows = []
    for (tid, name), group in by.items():
        n = sum(s.count for s in group)
        idle: float | None
        if mode == "dump":
            idle = 100.0 if all(s.idle for s in group) else 0.0
            gil_pct = (100.0 if any(s.gil for s in group) else 0.0) if gil else None
        else:
            idle = None if not ticks else round(max(0.0, 100.0 - _pct(n, ticks)), 2)
            gil_pct = min(100.0, _pct(n, ticks)) if gil and ticks else None
        rows.append(ThreadRow(tid, name, n, idle, gil_pct))
    rows.sort(key=lambda t: (-t.samples, t.name))
    return rows


def _frames(samples: list[Sample], total: int) -> list[FrameRow]:
    # per function (name, file): self and inclusive counts, and per line its self/total counts
    self_n: dict[tuple[str, str], int] = {}
    total_n: dict[tuple[str, str], int] = {}
    lines: dict[tuple[str, str], dict[int | None, int]] = {}
    for s in samples:
        if not s.frames:
            continue
        leaf = s.frames[-1]
        key = (leaf.name, leaf.file)
        self_n[key] = self_n.get(key, 0) + s.count
        seen: set[tuple[str, str]] = set()
        for f in s.frames:
            k = (f.name, f.file)
            at = lines.setdefault(k, {})
            at[f.line] = at.get(f.line, 0) + s.count
            if k not in seen:
                seen.add(k)
                total_n[k] = total_n.get(k, 0) + s.count
    rows = []
    for key, tot in total_n.items():
        at = lines[key]
        line = max(at, key=lambda ln: (at[ln], -(ln or 0)))
        sn = self_n.get(key, 0)
        rows.append(FrameRow(key[0], key[1], line, _pct(sn, total), _pct(tot, total), sn, tot))
    rows.sort(key=lambda r: (-r.self_samples, -r.total_samples, r.name))
    return rows


def _stacks(samples: list[Sample], total: int) -> list[StackRow]:
    merged: dict[tuple[Frame, ...], int] = {}
    for s in samples:
        merged[s.frames] = merged.get(s.frames, 0) + s.count
    best = sorted(merged.items(), key=lambda kv: -kv[1])[:TOP_STACKS]
    return [StackRow(n, _pct(n, total), [f.text() for f in frames[-STACK_DEPTH:]])
            for frames, n in best]


def summarise_process(pid: int, name: str, samples: list[Sample], *, mode: Mode,
                      ticks: int | None = None, gil: bool = False, bad_lines: int = 0,
                      keep: int = TOP_FRAMES) -> ProcessStacks:
    """One process's samples (``ticks``: rate × seconds of a record)."""
    total = sum(s.count for s in samples)
    threads = _threads(samples, mode, ticks, gil)
    if mode == "dump":
        idle = _pct(sum(1 for t in threads if t.idle_pct == 100.0), len(threads)) \
            if threads else None
        gil_pct = _pct(sum(1 for s in samples if s.gil), len(threads)) \
            if gil and threads else None
    else:
        known = [t.idle_pct for t in threads if t.idle_pct is not None]
        idle = min(known) if known else (100.0 if ticks else None)
        gil_pct = min(100.0, _pct(total, ticks)) if gil and ticks else None
    return ProcessStacks(pid=pid, name=name, samples=total, idle_pct=idle, gil_pct=gil_pct,
                         threads=threads, frames=_frames(samples, total)[:keep],
                         stacks=_stacks(samples, total), bad_lines=bad_lines)


def failed_process(pid: int, name: str, error: str) -> ProcessStacks:
    return ProcessStacks(pid=pid, name=name, samples=0, idle_pct=None, gil_pct=None,
                         threads=[], frames=[], error=error)


CHAIN_LINKS = 4  # frames at most in a top frame's chain


def is_helper(name: str) -> bool:
    """A small helper rather than the frame to act on: a private function or
    method (``_burn``, ``Cls._step``; not a dunder), a lambda or a comprehension."""
    last = name.rsplit(".", 1)[-1]
    return (last.startswith("_") and not last.startswith("__")) or (
        last.startswith("<") and last != "<module>")


def _frame_name(text: str) -> str:
    return text.rpartition(" (")[0] or text


def chain(process: ProcessStacks, name: str, file: str) -> list[str]:
    """``name`` and its callers in the hottest stack ending in it, up to the
    first that is not a helper (:func:`is_helper`); empty when ``name`` is not one."""
    if not is_helper(name):
        return []
    leaf = f"{name} ({file}"
    stack = next((st for st in process.stacks if st.frames and st.frames[-1].startswith(leaf)),
                 None)
    if stack is None:
        return []
    names = [name]
    for text in reversed(stack.frames[:-1]):
        if not is_helper(names[-1]) or len(names) >= CHAIN_LINKS:
            break
        names.append(_frame_name(text))
    return names if len(names) > 1 else []


def top_frame(processes: Iterable[ProcessStacks]) -> TopFrame | None:
    """The frame with the most self samples over all processes."""
    best: tuple[FrameRow, ProcessStacks] | None = None
    for p in processes:
        for f in p.frames[:1]:
            if best is None or (f.self_samples, f.self_pct) > (best[0].self_samples,
                                                                best[0].self_pct):
                best = (f, p)
    if best is None or best[0].self_samples == 0:
        return None
    f, p = best
    return TopFrame(f.name, f.file, f.line, f.self_pct, f.total_pct, p.pid, p.name,
                    chain(p, f.name, f.file))


def from_detail(detail: dict[str, Any]) -> StacksSummary | None:
    """The summary a stacks probe's detail holds (None: a failed probe's)."""
    if not isinstance(detail.get("processes"), list):
        return None
    try:
        return msgspec.convert({k: v for k, v in detail.items()
                                if k in StacksSummary.__struct_fields__}, StacksSummary)
    except (msgspec.ValidationError, TypeError):
        return None


def latest(probes: Iterable[Any], host: str | None = None
           ) -> tuple[Any, StacksSummary] | None:
    """The newest finished stacks probe (on ``host``) that read a process, and
    its summary: ``probes`` are the session state's (``kind``, ``host``,
    ``status``, ``detail``, ``finished_t``)."""
    best: tuple[Any, StacksSummary] | None = None
    for p in probes:
        if p.kind != KIND or p.status != "ok" or (host is not None and p.host != host):
            continue
        s = from_detail(p.detail)
        if s is not None and (best is None or (p.finished_t or 0.0) >= (best[0].finished_t or 0.0)):
            best = (p, s)
    return best
