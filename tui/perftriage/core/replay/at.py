"""State at a moment, headless: ``perftriage replay SESSION --at T --json``.

:func:`state_at` streams the transcript through the reducer and stops at
the first event after ``T`` (it never indexes or keeps events);
:func:`state_json` is the documented JSON shape of a state.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec

from perftriage.core.model import reducer
from perftriage.core.model.state import SessionState
from perftriage.core.replay.timeline import REPLAY_LOG_RING, new_state
from perftriage.core.store import stream, transcript

_CLOCK = re.compile(r"^(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")


class TimeOutOfRange(ValueError):
    """T is before the start or after the end of the session."""


def parse_time(text: str) -> float | None:
    """Seconds from ``"12.5"``, ``"MM:SS"``, ``"HH:MM:SS"``; None for ``"end"``.
    Raises ValueError with a one-line reason otherwise."""
    text = text.strip()
    if text.lower() == "end":
        return None
    m = _CLOCK.match(text)
    if m:
        hours, minutes, seconds = m.groups()
        if float(seconds) >= 60 or (hours is not None and int(minutes) >= 60):
            raise ValueError(f"{text!r}: minutes and seconds must be below 60")
        return int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r}: expected seconds (12.5), MM:SS, HH:MM:SS or 'end'") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{text!r}: not a time")
    return value


def state_at(path: Path | str, t: float | None,
             problems: list[stream.LineProblem] | None = None) -> tuple[SessionState, float]:
    """The state with every event of time <= ``t`` applied (``None``: all),
    and the session's duration as far as it was read. Raises
    :class:`TimeOutOfRange` when ``t`` is outside ``[0, duration]``."""
    path = Path(path)
    first, offset = stream.header_and_offset(path)
    if not first.strip():
        raise transcript.TranscriptError(f"{path}: empty file, not a perftriage session")
    header = transcript._parse_header(path, first)
    state = new_state(header, str(header.get("name") or path.stem), REPLAY_LOG_RING)
    if t is not None and t < 0:
        raise TimeOutOfRange(f"T={t:g}s is before the session started (T >= 0)")
    apply = reducer.apply
    last_t = 0.0
    past_t = False
    for _, event in stream.iter_events(path, offset, problems=problems):
        if t is not None and event.t > t:
            past_t = True
            last_t = event.t
            break
        apply(state, event)
        last_t = event.t
    if t is not None and not past_t and t > last_t:
        raise TimeOutOfRange(f"T={t:g}s is after the end of the session ({last_t:.3f}s)")
    return state, last_t


def _builtins(obj: Any) -> Any:
    return msgspec.to_builtins(obj)


def state_json(state: SessionState, t: float) -> dict[str, Any]:
    """``{t, hosts, probes, hypotheses, gaps, notes}`` as documented in the README."""
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
                       "summary": e.summary, "t": e.t} for e in h.evidence]}
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
