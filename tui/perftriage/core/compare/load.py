"""A transcript streamed into a :class:`Recording` (never all its events in memory)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from perftriage.core.compare.readings import GPU_FIELDS, fields
from perftriage.core.compare.recording import Recording
from perftriage.core.model import events as ev
from perftriage.core.replay.log_ledger import LOG_EVENTS, LogLedger
from perftriage.core.store import stream, transcript

# what a comparison outside its slices needs of these bulky lines: their time only
_BULK = (stream.LOG_LINES_PREFIX, stream.HOST_SAMPLE_PREFIX)
_MAX_T = 1e10  # the bound of an event's t (ev.Seconds)


# what a comparison reads of a ``host.sample`` line (the rest is skipped by
# the decoder, not built: a host of 8 GPUs decodes several times faster): the
# fields the table of readings names (core/compare/readings.py), its GPUs'
# too, and what the recording keeps besides (GPU models, power, slowdowns)
_Gpu = msgspec.defstruct("_Gpu", [
    ("index", int), ("name", str, ""),
    ("uuid", str, ""),  # hosts of one machine (the same UUIDs) are one to the triage
    ("power_w", float | None, None),
    ("throttle", list[str], []), ("sm_clock_mhz", float | None, None),
    ("sm_clock_max_mhz", float | None, None),
    *((f, float | None, None) for f in GPU_FIELDS)])
_HostGpus = msgspec.defstruct("_HostGpus", [
    ("host", str),
    ("t", ev.Seconds, 0.0),  # bounded as every event's: 1e300 or 1e999 is a bad line
    ("gpus", list[_Gpu], []),  # type: ignore[valid-type]
    ("gpu_age_s", float | None, None),
    *((f, float | None, None) for _, f in fields("host.sample"))])


# (a struct made from the table: its fields are read by name, as the recording's)
_host_gpus: msgspec.json.Decoder[Any] = msgspec.json.Decoder(_HostGpus)


def load(path: Path | str, problems: list[stream.LineProblem] | None = None,
         windows: Sequence[tuple[float, float]] | None = None) -> Recording:
    """Raises :class:`~perftriage.core.store.transcript.TranscriptError` for a
    file that is not a transcript (or OSError); bad lines go to ``problems``.

    With ``windows`` ((start, end) session times), log batches and host
    samples outside them are read for their time only, never decoded or
    parsed (what makes two slices of a long investigation cheap); every
    other event is read whole (runs, servers, profiles, hypotheses)."""
    path = Path(path)
    header = transcript.read_header(path)
    _, offset = stream.header_and_offset(path)
    rec = Recording(name=str(header.get("name") or path.stem))
    feed, decode = rec.feed, ev._decoder.decode
    # each line of a followed file once (a transcript older than log.position
    # may hold one read twice): the ledger hands on the lines not counted before
    ledger = LogLedger(lambda t, sid, lines: feed(ev.LogLines(source_id=sid, lines=lines,
                                                                t=t or 0.0)))
    spans = [(a - 1.0, b + 1.0) for a, b in sorted(windows)] if windows is not None else None
    lineno = 1
    for _, line, terminated in stream.iter_raw(path, offset):
        lineno += 1
        if not line or line.isspace() or line.startswith(stream.SUMMARY_PREFIX):
            continue
        if spans is not None and terminated and line.startswith(_BULK):
            try:
                t = stream.raw_t(line)
            except ValueError:
                t = None
            if t is not None and not -_MAX_T <= t <= _MAX_T:
                t = None  # decoded below, to say why the line is bad (never an infinite duration)
            if t is not None and not _inside(spans, t):
                if t > rec.duration:
                    rec.duration = t
                continue
        try:
            if line.startswith(stream.HOST_SAMPLE_PREFIX):
                h = _host_gpus.decode(line)
                rec.duration = max(rec.duration, h.t)
                rec.host_reading(h.host, h.t, h.gpu_age_s is not None, h.gpus, h)
                continue
            event = decode(line)
        except stream.DECODE_ERRORS as exc:
            if problems is not None:
                problems.append(stream.line_problem(lineno, line, exc, terminated))
            continue
        if isinstance(event, LOG_EVENTS):
            ledger.event(event)
            if type(event) is ev.LogLines:
                continue
        feed(event)
    rec.flush()
    return rec


def _inside(spans: list[tuple[float, float]], t: float) -> bool:
    for a, b in spans:
        if a <= t <= b:
            return True
    return False


_SEGMENT_PREFIX = b'{"type":"segment.started"'


def segment_starts(path: Path | str) -> list[tuple[int, float]]:
    """(run, start t) of each run, from the segment lines alone (nothing else decoded)."""
    _, offset = stream.header_and_offset(path)
    out = []
    for _, line, terminated in stream.iter_raw(path, offset):
        if terminated and line.startswith(_SEGMENT_PREFIX):
            try:
                e = decode_event(line)
            except stream.DECODE_ERRORS:
                continue
            if isinstance(e, ev.SegmentStarted):
                out.append((e.segment, e.t))
    return out


def decode_event(line: bytes) -> ev.Event:
    return ev._decoder.decode(line)
