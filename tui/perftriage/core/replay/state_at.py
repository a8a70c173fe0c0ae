"""State at a moment, headless: ``perftriage replay SESSION --at T --json``.

:func:`state_at` streams the transcript through the reducer and stops at
the first event after ``T`` (it never indexes or keeps events);
:func:`state_json` is the documented JSON shape of a state.
"""

from __future__ import annotations

import functools

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from perftriage.core.model import events as ev
from perftriage.core.model import reducer
from perftriage.core.model.check_state import overall
from perftriage.core.model.state import SessionState
from perftriage.core.replay.log_ledger import LOG_EVENTS
from perftriage.core.replay.timeline import REPLAY_LOG_RING, new_state
from perftriage.core.store import stream, transcript

class TimeOutOfRange(ValueError):
    """T is before the start or after the end of the session."""


def _raw_host(line: bytes) -> str | None:
    start = len(stream.HOST_SAMPLE_PREFIX)
    end = line.find(b'"', start)
    name = line[start:end]
    return None if end < 0 or b"\\" in name else name.decode("utf-8", "replace")


def _skip_rest(fh, size: int) -> bytes:
    """Read past the rest of a line too long to hold (``size`` bytes read so far)."""
    while True:
        piece = fh.readline(stream.SKIP_PIECE)
        size += len(piece)
        if not piece or piece.endswith(b"\n"):
            return stream.TooLong(size - (1 if piece.endswith(b"\n") else 0))


def state_at(path: Path | str, t: float | None,
             problems: list[stream.LineProblem] | None = None,
             log_events: Callable[[ev.Event], None] | None = None,
             ) -> tuple[SessionState, float]:
    """The state with every event of time <= ``t`` applied (``None``: all),
    as far as :func:`state_json` shows it, and the session's duration as far
    as it was read. Raises :class:`TimeOutOfRange` when ``t`` is outside
    ``[0, duration]``.

    Streams, and skips what the JSON does not show: log lines are not decoded
    at all, and of a host's samples only the latest is decoded (plus the
    first one after a host.status, which may bring the host up), so the
    reducer sees every event that changes hosts, probes, hypotheses, gaps
    and notes, in order. ``log_events``, when given, is called with every
    ``log.*`` event in order (the report's scan): log batches are decoded then,
    and go to it instead of the state.
    ``event_count`` and ``last_t`` count every event, skipped or not."""
    path = Path(path)
    first, offset = stream.header_and_offset(path)
    if not first.strip():
        raise transcript.TranscriptError(f"{path}: empty file, not a perftriage session")
    header = transcript._parse_header(path, first)
    state = new_state(header, str(header.get("name") or path.stem), REPLAY_LOG_RING)
    if t is not None and t < 0:
        raise TimeOutOfRange(f"T={t:g}s is before the session started (T >= 0)")
    apply, decode = reducer.apply, ev._decoder.decode
    pending: dict[str, tuple[int, bytes]] = {}  # host -> (line number, latest sample line)

    def decoded(lineno: int, line: bytes, terminated: bool = True) -> ev.Event | None:
        try:
            return decode(line)
        except stream.DECODE_ERRORS as exc:
            if problems is not None:
                problems.append(stream.line_problem(lineno, line, exc, terminated))
            return None

    def flush(host: str) -> None:
        lineno, line = pending.pop(host)
        event = decoded(lineno, line)
        if event is not None:
            apply(state, event)

    limit = float("inf") if t is None else t
    last_t = 0.0
    count = 0
    past_t = False
    lineno = 1
    hosts, skip_logs = state.hosts, log_events is None
    max_line = stream.MAX_LINE_BYTES
    with stream.open_regular(path) as fh:
        fh.seek(offset)
        # readline with a limit, called from C: no generator per line, no line held whole
        for line in iter(functools.partial(fh.readline, max_line + 1), b""):
            lineno += 1
            terminated = line[-1:] == b"\n"
            if len(line) > max_line and not terminated:  # too long to hold: read past it
                size, line = len(line), b""
                line, terminated = _skip_rest(fh, size), True
            # judged by its time alone, not decoded: a host sample (superseded
            # unless it is the host's last) and, without a scan, log lines
            host = _raw_host(line) if terminated and line.startswith(stream.HOST_SAMPLE_PREFIX) else None
            if host is not None or (skip_logs and terminated and line.startswith(stream.LOG_LINES_PREFIX)):
                lt = stream.raw_t(line)
                if lt > limit:
                    past_t, last_t = True, lt
                    break
                if lt > last_t:
                    last_t = lt
                if host is None:
                    count += 1
                    continue
                hs = hosts.get(host)
                if hs is not None and hs.conn_state not in ("connecting", "retrying"):
                    count += 1
                    pending[host] = (lineno, line)
                    continue
                pending.pop(host, None)
            elif line.isspace() or line.startswith(stream.SUMMARY_PREFIX):
                continue
            event = decoded(lineno, line, terminated)
            if event is None:
                continue
            if event.t > limit:
                past_t, last_t = True, event.t
                break
            count += 1
            if event.t > last_t:
                last_t = event.t
            if log_events is not None and isinstance(event, LOG_EVENTS):
                log_events(event)
            if log_events is not None and type(event) is ev.LogLines:
                if event.source_id in state.logs:
                    continue
                event = ev.LogLines(source_id=event.source_id, t=event.t, wall=event.wall)
            if isinstance(event, ev.HostStatus) and event.host in pending:
                flush(event.host)
            apply(state, event)
    for host in list(pending):
        flush(host)
    state.event_count, state.last_t = count, last_t
    if t is not None and not past_t and t > last_t:
        raise TimeOutOfRange(f"T={t:g}s is after the end of the session ({last_t:.3f}s)")
    return state, last_t


def _builtins(obj: Any) -> Any:
    return msgspec.to_builtins(obj)


def _check_json(h: Any) -> dict[str, Any]:
    """A hypothesis's check as recorded: its verdict over all scopes, each
    scope's verdict with the values and reason, every change so far."""
    return {
        "text": h.check, "for_s": h.for_s, "scope": h.scope, "verdict": overall(h.verdicts),
        "scopes": [{"scope": s, "verdict": v.verdict, "since": v.since_t, "values": v.values,
                    "reason": v.reason} for s, v in h.verdicts.items()],
        "changes": [{"t": c.t, "scope": c.scope, "verdict": c.verdict, "values": c.values,
                     "reason": c.reason} for c in h.verdict_log],
    }


def state_json(state: SessionState, t: float) -> dict[str, Any]:
    """``{t, hosts, probes, hypotheses, gaps, notes}`` as documented in docs/replay.md."""
    hosts = {
        name: {
            "state": hs.conn_state,
            "reason": hs.reason,
            "sample_t": hs.sample_t,
            "gpus": [_builtins(g) for g in hs.gpus],
        }
        for name, hs in state.hosts.items()
    }
    probes = [
        {"id": p.probe_id, "host": p.host, "kind": p.kind, "args": list(p.args),
         "status": p.status, "summary": p.summary}
        for p in state.probes.values()
    ]
    hypotheses = [
        {"id": h.hyp_id, "title": h.title, "status": h.status, "note": h.note,
         "evidence": [{"kind": e.ref_kind, "ref": e.ref_id, "stance": e.stance,
                       "summary": e.summary, "t": e.t} for e in h.evidence],
         **({"check": _check_json(h)} if h.check else {})}
        for h in state.hypotheses
    ]
    gaps = []
    for g in state.gaps:
        d = _builtins(g)
        d.pop("type", None)
        gaps.append(d)
    notes = [{"t": n.t, "text": n.text, "host": n.host} for n in state.notes]
    return {"t": t, "hosts": hosts, "probes": probes, "hypotheses": hypotheses,
            "gaps": gaps, "notes": notes}


# the figures of a live gap in ``replay --json`` (never a verdict: the cause is the triage's)
GAP_KEYS = ("floor_ms", "measured_ms", "gap", "peak_gbs", "dram_bw_gbs", "dram_busy_pct",
            "useful_bw_gbs", "traffic_ratio", "idle_pct", "tokens_per_s", "nvlink_pct",
            "batch", "slowest_gpu", "outlier_side", "source", "counter_quality", "note")


def live_gaps_json(samples: Any, at: float) -> dict[str, dict[str, Any]]:
    """Per host, its latest ``gap.sample`` up to ``at`` (``sample_t``, ``age_s``)."""
    latest: dict[str, Any] = {}
    for s in samples:
        if s.t <= at:
            latest[s.host] = s
    return {host: {"sample_t": s.t, "age_s": round(at - s.t, 3),
                   **{k: getattr(s, k, None) for k in GAP_KEYS}}
            for host, s in latest.items()}
