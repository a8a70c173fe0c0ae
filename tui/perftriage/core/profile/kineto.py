"""torch.profiler / Kineto Chrome traces (``.json`` or ``.json.gz``).

Decoded in one pass by msgspec into small typed structs (only the fields a
kernel summary needs), which is both faster and leaner than decoding into
dicts. Of ``args`` only ``stream``, ``correlation`` and ``External id`` are
declared (:class:`Args`); the rest (grid, registers, ...) and ``tid`` are
skipped without building an object, which on a 300 MB trace saves ~100 MiB
of peak RSS against keeping ``args`` as ``msgspec.Raw`` (measured: 946 vs
841 MiB). Kernel-like events are ``ph: "X"`` with ``cat`` ``kernel``,
``gpu_memcpy`` or ``gpu_memset``; their ``pid`` is the device. Totals go by
the kernel's own name; the op that launched it is joined by ids
(:mod:`~perftriage.core.profile.launchers`), since under CUDA-graph replay
kernels lose their CPU parent.
The text comes from :mod:`~perftriage.core.profile.reader` (bounded, gzip
inflated); a kernel's time or duration that no profiler writes (negative,
beyond ``MAX_US``) is refused with the event's index.
"""

from __future__ import annotations

from array import array
from collections import Counter

import msgspec

from perftriage.core.json_errors import decode_error_text
from perftriage.core.profile.buckets import COMMUNICATION, Classifier
from perftriage.core.profile.idle import ONE_KERNEL, Kernel, Launch, breakdown, is_sync_call, launch_kind
from perftriage.core.profile.launchers import (
    MAX_ID,
    OP_CATS,
    Launcher,
    count_launchers,
    launcher_ids,
)
from perftriage.core.profile.model import TraceError
from perftriage.core.profile.reader import MAX_KERNEL_NAMES, MAX_US, cut_name, quoted, too_many_kernels
from perftriage.core.profile.rank import RankData
from perftriage.core.profile.timeline import DeviceTimeline

# Kineto's categories for device activity (older Kineto capitalised them)
KERNEL_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"})
# the CPU side of a launch: the CUDA runtime and driver calls
LAUNCH_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "Driver"})


class Args(msgspec.Struct, gc=False):
    """The ``args`` a launch, its kernel and the CPU op around the launch are
    joined by (the idle breakdown, :mod:`~perftriage.core.profile.launchers`);
    every other key is skipped unread."""

    stream: int | str | None = None
    correlation: int | str | None = None
    external_id: int | str | None = msgspec.field(default=None, name="External id")


class TraceEvent(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    ts: float = 0.0
    dur: float = 0.0
    pid: int | str = 0  # the device, for kernel events
    args: Args | None = None


class ChromeTrace(msgspec.Struct, gc=False):
    traceEvents: list[TraceEvent]


_DECODER = msgspec.json.Decoder(ChromeTrace | list[TraceEvent])


def decode_events(path: str, text: bytes | bytearray) -> list[TraceEvent]:
    try:
        doc = _DECODER.decode(text)
    except msgspec.DecodeError as exc:
        why = decode_error_text(exc)
        if why.startswith("not JSON"):
            raise TraceError(path, f"not a JSON trace ({why.removeprefix('not JSON: ')}); expected "
                                   "a torch.profiler / Kineto trace (.json, .json.gz) or an nsys "
                                   "cuda_gpu_kern_sum CSV") from None
        hint = " (truncated?)" if "truncated" in why else ""
        raise TraceError(path, f"not a Chrome/Kineto trace{hint}: {why}") from None
    except RecursionError:  # msgspec recurses into what it skips too (``args``)
        raise TraceError(path, "not a Chrome/Kineto trace: JSON nested too deeply") from None
    return doc.traceEvents if isinstance(doc, ChromeTrace) else doc


def bad_time(path: str, index: int, ev: TraceEvent, kind: str = "kernel") -> TraceError:
    what = (f"a negative duration ({ev.dur:g} µs)" if ev.dur < 0 else
            f"a duration of {ev.dur:g} µs" if not ev.dur <= MAX_US else
            f"a start time of {ev.ts:g} µs")
    return TraceError(path, f"event {index}: {kind} {quoted(ev.name)} has {what}: "
                            "not a time a profiler writes")


def read(path: str, text: list[bytes | bytearray], label: str, classifier: Classifier) -> RankData:
    """One rank's kernels and device timelines from a Chrome trace's text,
    handed over as a one-item list the reader empties: the text (as big as
    the trace) is freed once decoded, before the summary's own tables grow."""
    events = decode_events(path, text.pop())
    # raw name -> [total µs, calls, is communication, each call's duration and
    # correlation]; names are cut (and classified) once per distinct name,
    # never per event
    rows: dict[str, list] = {}
    devices: dict[int | str, DeviceTimeline] = {}
    bucket = classifier.bucket
    streams: dict[object, list[Kernel]] = {}
    launches: dict[int, Launch] = {}
    call_kinds: dict[str, int] = {}  # CUDA call name -> launch_kind
    last_pid: int | str | None = None
    last_stream: int | str | None = None
    lane: list[Kernel] = []
    ops: dict[int, str] = {}  # External id -> CPU op name (what launched a kernel)
    syncs: list[tuple[float, float]] = []  # blocking sync calls: (start, end) µs
    for i, ev in enumerate(events):
        if ev.ph != "X":
            continue
        name, ts, dur, cat = ev.name, ev.ts, ev.dur, ev.cat
        if cat not in KERNEL_CATS:
            if cat in LAUNCH_CATS:
                kind = call_kinds.get(name)
                if kind is None:  # decided once per distinct call name
                    kind = call_kinds[name] = launch_kind(name)
                if kind and (a := ev.args) is not None and type(corr := a.correlation) is int:
                    if not (0.0 <= dur <= MAX_US and -MAX_US <= ts <= MAX_US):
                        raise bad_time(path, i, ev, "launch call")
                    launches[corr] = (ts, dur, kind == ONE_KERNEL, i)
                elif not kind and is_sync_call(name) and 0.0 <= dur <= MAX_US:
                    syncs.append((ts, ts + dur))
            elif cat in OP_CATS and (a := ev.args) is not None:
                if type(ext := a.external_id) is int:
                    ops[ext] = name
            continue
        if not (0.0 <= dur <= MAX_US and -MAX_US <= ts <= MAX_US):  # NaN fails too
            raise bad_time(path, i, ev)
        a = ev.args
        corr = -1
        if a is not None:
            if type(c := a.correlation) is int and 0 <= c <= MAX_ID:
                corr = c
            if (stream := a.stream) is not None:
                if stream != last_stream or ev.pid != last_pid:  # kernels come in runs per stream
                    last_pid, last_stream = ev.pid, stream
                    lane = streams.setdefault((last_pid, stream), [])
                lane.append((ts, ts + dur, corr))
        row = rows.get(name)
        if row is None:
            if len(rows) >= MAX_KERNEL_NAMES:
                raise too_many_kernels(path)
            row = rows[name] = [0.0, 0, bucket(cut_name(name)) == COMMUNICATION,
                                array("d"), array("q")]
        row[0] += dur
        row[1] += 1
        row[3].append(dur)
        row[4].append(corr)
        tl = devices.get(ev.pid)
        if tl is None:
            tl = devices[ev.pid] = DeviceTimeline()
        (tl.comm if row[2] else tl.others).append((ts, ts + dur))
    kernels: dict[str, list[float]] = {}
    durations: dict[str, list[array]] = {}
    launched_by: dict[str, Counter[Launcher]] = {}
    ids, table = launcher_ids(events, launches, ops)
    for name, (total, count, _, durs, corrs) in rows.items():
        cut = cut_name(name)
        acc = kernels.setdefault(cut, [0.0, 0])
        acc[0] += total
        acc[1] += count
        durations.setdefault(cut, []).append(durs)
        launched_by.setdefault(cut, Counter()).update(count_launchers(corrs, ids, table))
    return RankData(file=path, label=label, kernels=kernels, devices=devices,
                    idle=breakdown(streams, launches, syncs=syncs), durations=durations,
                    launched_by=launched_by)
