"""torch.profiler / Kineto Chrome traces (``.json`` or ``.json.gz``).

Decoded in one pass by msgspec into small typed structs (only the fields a
kernel summary needs; ``args`` is kept raw and never parsed), which is both
faster and leaner than decoding into dicts. ``args`` (grid, registers,
``External id``) and ``tid`` are not declared at all: msgspec then skips them
without building an object, which on a 300 MB trace saves ~100 MiB of peak
RSS against keeping ``args`` as ``msgspec.Raw`` (measured: 946 vs 841 MiB). Kernel-like events are
``ph: "X"`` with ``cat`` ``kernel``, ``gpu_memcpy`` or ``gpu_memset``; their
``pid`` is the device. Under CUDA-graph replay kernels lose their CPU parent
(no ``External id``), so everything here goes by the kernel's own name.
The text comes from :mod:`~perftriage.core.profile.reader` (bounded, gzip
inflated); a kernel's time or duration that no profiler writes (negative,
beyond ``MAX_US``) is refused with the event's index.
"""

from __future__ import annotations

import msgspec

from perftriage.core.json_errors import decode_error_text
from perftriage.core.profile.buckets import COMMUNICATION, Classifier
from perftriage.core.profile.idle import ONE_KERNEL, Kernel, Launch, breakdown, launch_kind
from perftriage.core.profile.model import TraceError
from perftriage.core.profile.reader import MAX_KERNEL_NAMES, MAX_US, cut_name, quoted, too_many_kernels
from perftriage.core.profile.rank import RankData
from perftriage.core.profile.timeline import DeviceTimeline

# Kineto's categories for device activity (older Kineto capitalised them)
KERNEL_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"})
# the CPU side of a launch: the CUDA runtime and driver calls
LAUNCH_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "Driver"})


class Args(msgspec.Struct, gc=False):
    """The two ``args`` a launch and its kernel are joined by (the idle
    breakdown); every other key is skipped unread."""

    stream: int | str | None = None
    correlation: int | str | None = None


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


def read(path: str, text: bytes | bytearray, label: str, classifier: Classifier) -> RankData:
    """One rank's kernels and device timelines from a Chrome trace's text."""
    events = decode_events(path, text)
    # raw name -> [total µs, calls, is communication]; names are cut (and
    # classified) once per distinct name, never per event
    rows: dict[str, list] = {}
    devices: dict[int | str, DeviceTimeline] = {}
    bucket = classifier.bucket
    streams: dict[object, list[Kernel]] = {}
    launches: dict[int, Launch] = {}
    call_kinds: dict[str, int] = {}  # CUDA call name -> launch_kind
    last_pid: int | str | None = None
    last_stream: int | str | None = None
    lane: list[Kernel] = []
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
                    launches[corr] = (ts, dur, kind == ONE_KERNEL)
            continue
        if not (0.0 <= dur <= MAX_US and -MAX_US <= ts <= MAX_US):  # NaN fails too
            raise bad_time(path, i, ev)
        a = ev.args
        if a is not None and (stream := a.stream) is not None:
            if stream != last_stream or ev.pid != last_pid:  # kernels come in runs per stream
                last_pid, last_stream = ev.pid, stream
                lane = streams.setdefault((last_pid, stream), [])
            corr = a.correlation
            lane.append((ts, ts + dur, corr if type(corr) is int else -1))
        row = rows.get(name)
        if row is None:
            if len(rows) >= MAX_KERNEL_NAMES:
                raise too_many_kernels(path)
            row = rows[name] = [0.0, 0, bucket(cut_name(name)) == COMMUNICATION]
        row[0] += dur
        row[1] += 1
        tl = devices.get(ev.pid)
        if tl is None:
            tl = devices[ev.pid] = DeviceTimeline()
        (tl.comm if row[2] else tl.others).append((ts, ts + dur))
    kernels: dict[str, list[float]] = {}
    for name, (total, calls, _) in rows.items():
        acc = kernels.setdefault(cut_name(name), [0.0, 0])
        acc[0] += total
        acc[1] += calls
    return RankData(file=path, label=label, kernels=kernels, devices=devices,
                    idle=breakdown(streams, launches))
