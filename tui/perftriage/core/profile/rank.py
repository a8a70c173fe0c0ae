"""What one trace file contributes: per kernel name its total time and call
count, and (for timeline sources) each device's kernel intervals."""

from __future__ import annotations

import re
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePath

from perftriage.core.profile.gaps import GapParts
from perftriage.core.profile.idle import IdleParts
from perftriage.core.profile.launchers import Launcher
from perftriage.core.profile.timeline import DeviceTimeline
from perftriage.core.profile.trace_meta import TraceMeta

# SGLang's rank part of a trace file name: TP-0, TP-3-DP-1-EP-3, ...
_RANK_PART = re.compile(r"(TP-\d+(?:-(?:DP|PP|EP)-\d+)*)")


def rank_label(path: str, index: int) -> str:
    """A short name for the rank a file holds: SGLang's ``TP-r[-DP-..]`` part
    of the name, else ``rank<index>``."""
    m = _RANK_PART.search(PurePath(path).name)
    return m.group(1) if m else f"rank{index}"


def repeated_ranks(paths: list[str]) -> dict[str, list[str]]:
    """Rank labels more than one file claims (``TP-0`` from an eager and a
    CUDA-graph capture), each with its files: such files come from different
    captures and must not be summed as one."""
    by_label: dict[str, list[str]] = {}
    for i, p in enumerate(paths):
        by_label.setdefault(rank_label(p, i), []).append(p)
    return {label: files for label, files in by_label.items() if len(files) > 1}


@dataclass
class RankData:
    file: str
    label: str
    # kernel name -> [total µs, calls]
    kernels: dict[str, list[float]] = field(default_factory=dict)
    # device -> its timeline; None for sources without one (nsys summaries)
    devices: dict[int | str, DeviceTimeline] | None = field(default_factory=dict)
    # idle gaps by cause and launch delays; None for sources without launches (nsys)
    idle: IdleParts | None = None
    # kernel name -> each call's duration (µs), one array per raw name the
    # cut name covers; None for sources without per-call times (nsys summaries)
    durations: dict[str, list[array]] | None = None
    # kernel name -> how many calls each (CPU op, CUDA call) launched; None
    # for sources without launches
    launched_by: dict[str, Counter[Launcher]] | None = None
    # what the trace says of itself (rank, world size, GPU, time base); None for nsys
    meta: TraceMeta | None = None
    # the devices' idle gaps by length, the long ones with the op spanning each
    gaps: GapParts | None = None
    launch_calls: int = 0  # CUDA/HIP calls that put work on a stream (0: no CPU side)
    graph_captures: int = 0  # calls that capture or instantiate a graph (warm-up)
    training: bool = False  # autograd backward or optimizer ops in the trace
    engine: str | None = None  # sglang / vllm, where its Python names say so
    mtia_events: int = 0  # MTIA device events (no CUDA/HIP kernels)
