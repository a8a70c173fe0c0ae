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
from dataclasses import dataclass

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
from perftriage.core.profile.gaps import GapParts, device_gaps, name_spanning_ops
from perftriage.core.profile.reader import (
    MAX_KERNEL_NAMES,
    MAX_START_US,
    MAX_US,
    cut_name,
    quoted,
    too_many_kernels,
)
from perftriage.core.profile.rank import RankData
from perftriage.core.profile.timeline import DeviceTimeline, union
from perftriage.core.profile.trace_meta import meta_of

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
    # read leniently once the trace is decoded (core/profile/trace_meta.py): a
    # value of the wrong type there is ignored, never a refusal
    distributedInfo: msgspec.Raw = msgspec.Raw()  # empty: absent
    deviceProperties: msgspec.Raw = msgspec.Raw()
    baseTimeNanoseconds: msgspec.Raw = msgspec.Raw()


_DECODER = msgspec.json.Decoder(ChromeTrace | list[TraceEvent])


@dataclass
class Header:
    """The trace's own metadata, copied out of the text (a ``Raw`` would keep
    the whole text alive)."""

    dist: bytes | None = None
    devices: bytes | None = None
    base_ns: object = None


def decode_events(path: str, text: bytes | bytearray,
                  header: Header | None = None) -> list[TraceEvent]:
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
    if not isinstance(doc, ChromeTrace):
        return doc
    if header is not None:
        header.dist = bytes(doc.distributedInfo) or None
        header.devices = bytes(doc.deviceProperties) or None
        if doc.baseTimeNanoseconds:
            try:
                header.base_ns = msgspec.json.decode(doc.baseTimeNanoseconds, type=int | float)
            except msgspec.DecodeError:
                header.base_ns = None
    return doc.traceEvents


def bad_time(path: str, index: int, ev: TraceEvent, kind: str = "kernel") -> TraceError:
    what = (f"a negative duration ({ev.dur:g} µs)" if ev.dur < 0 else
            f"a duration of {ev.dur:g} µs" if not ev.dur <= MAX_US else
            f"a start time of {ev.ts:g} µs")  # beyond MAX_START_US, or not a number
    return TraceError(path, f"event {index}: {kind} {quoted(ev.name)} has {what}: "
                            "not a time a profiler writes")


# calls that capture a CUDA/HIP graph (warm-up, not a step)
_CAPTURE_WORDS = ("BeginCapture", "GraphInstantiate")
# op names of a training step (autograd's backward nodes, the optimizer)
_TRAINING_WORDS = ("Backward", "backward", "Optimizer.step", "optimizer.step")
_ENGINES = ("sglang", "vllm")


def _call_info(name: str) -> tuple[int, bool]:
    return launch_kind(name), any(w in name for w in _CAPTURE_WORDS)


def _in_time(ev: TraceEvent) -> bool:
    """A duration in 0..MAX_US and a start any profiler writes (epoch µs
    included); NaN fails both."""
    return 0.0 <= ev.dur <= MAX_US and -MAX_START_US <= ev.ts <= MAX_START_US


def read(path: str, text: list[bytes | bytearray], label: str, classifier: Classifier) -> RankData:
    """One rank's kernels and device timelines from a Chrome trace's text,
    handed over as a one-item list the reader empties: the text (as big as
    the trace) is freed once decoded, before the summary's own tables grow."""
    header = Header()
    events = decode_events(path, text.pop(), header)
    # raw name -> [total µs, calls, is communication, each call's duration and
    # correlation]; names are cut (and classified) once per distinct name,
    # never per event
    rows: dict[str, list] = {}
    devices: dict[int | str, DeviceTimeline] = {}
    bucket = classifier.bucket
    streams: dict[tuple, list[Kernel]] = {}  # (device, stream) -> its kernels
    launches: dict[int, Launch] = {}
    call_info: dict[str, tuple[int, bool]] = {}  # CUDA call name -> (launch_kind, captures)
    last_pid: int | str | None = None
    last_stream: int | str | None = None
    lane: list[Kernel] = []
    ops: dict[int, str] = {}  # External id -> CPU op name (what launched a kernel)
    syncs: list[tuple[float, float]] = []  # blocking sync calls: (start, end) µs
    work_calls = captures = mtia = 0
    training = False
    engine: str | None = None
    first_graph: tuple[float, int] | None = None  # the first graph launch: (start, correlation)
    for i, ev in enumerate(events):
        if ev.ph != "X":
            continue
        name, ts, dur, cat = ev.name, ev.ts, ev.dur, ev.cat
        if cat not in KERNEL_CATS:
            if cat in LAUNCH_CATS:
                info = call_info.get(name)
                if info is None:  # decided once per distinct call name
                    info = call_info[name] = _call_info(name)
                kind = info[0]
                if kind:
                    work_calls += 1
                    if (a := ev.args) is not None and type(corr := a.correlation) is int:
                        if not _in_time(ev):
                            raise bad_time(path, i, ev, "launch call")
                        launches[corr] = (ts, dur, kind == ONE_KERNEL, i)
                        if kind != ONE_KERNEL and "GraphLaunch" in name and (
                                first_graph is None or ts < first_graph[0]):
                            first_graph = (ts, corr)
                elif info[1]:
                    captures += 1
                elif is_sync_call(name) and 0.0 <= dur <= MAX_US:
                    syncs.append((ts, ts + dur))
            elif cat in OP_CATS:
                if (a := ev.args) is not None and type(ext := a.external_id) is int:
                    ops[ext] = name
                if not training and any(w in name for w in _TRAINING_WORDS):
                    training = True
                if engine is None and cat == "user_annotation":
                    engine = _engine(name)
            elif cat == "python_function":
                if engine is None:
                    engine = _engine(name)
            elif cat.startswith("mtia"):
                mtia += 1
            continue
        if not _in_time(ev):
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
    for pid, tl in devices.items():
        if tl.window() > MAX_US:
            raise TraceError(path, f"device {str(pid)[:40]!r}: kernels span {tl.window():g} µs: "
                                   "not a window a profiler writes")
    gaps = gap_parts(devices, streams, launches, None if first_graph is None else first_graph[0])
    name_spanning_ops(gaps.long, events)
    meta = meta_of(path, header.dist, header.devices, header.base_ns, set(devices))
    return RankData(file=path, label=label, kernels=kernels, devices=devices,
                    idle=breakdown(streams, launches, syncs=syncs), durations=durations,
                    launched_by=launched_by, meta=meta, gaps=gaps, launch_calls=work_calls,
                    graph_captures=captures, training=training, engine=engine, mtia_events=mtia)


def _engine(name: str) -> str | None:
    low = name.lower()
    return next((e for e in _ENGINES if e in low), None)


def gap_parts(devices: dict[int | str, DeviceTimeline], streams: dict[tuple, list[Kernel]],
              launches: dict[int, Launch], first_graph_ts: float | None) -> GapParts:
    """The devices' idle gaps by length (:mod:`~perftriage.core.profile.gaps`)."""
    per_device: dict[object, list[Kernel]] = {}
    for key, lane in streams.items():  # keyed (device, stream)
        per_device.setdefault(key[0], []).extend(lane)
    parts = GapParts()
    for device, tl in devices.items():
        mine = sorted(per_device.get(device, []))
        device_gaps(union(tl.comm + tl.others), mine, launches, first_graph_ts, parts)
    return parts
