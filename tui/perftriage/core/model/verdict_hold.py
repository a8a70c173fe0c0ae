"""When a live-gap verdict counts as changed: once the new one has held
:data:`HOLD_S` seconds (``gap.sample`` comes once a second per host, and a
verdict from one second of counters flickers at a threshold). Shared by the
report's verdict spans (``core/analysis/verdict_spans``) and the replay's
markers (``core/replay/timeline``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

HOLD_S = 5.0


def confirmed_change(samples: Sequence[Any], latest: Any, hold_s: float = HOLD_S) -> str | None:
    """The verdict kind ``latest`` (a GapSample, the last of ``samples``)
    confirms for its host, when it is the sample at which a run of that kind
    first reaches ``hold_s`` and the verdict that held before was another;
    else None. ``samples``: GapSample events in time order, any hosts.

    Called for every sample while a replay is indexed: it walks back only
    over the last ``hold_s`` seconds, unless the run just reached the hold."""
    mine = (s for s in reversed(samples) if s.host == latest.host)
    if id(next(mine, None)) != id(latest):  # not the host's newest sample
        return None
    kind, start, prev_t = latest.verdict_kind, latest, None
    rest: list[Any] = []
    for s in mine:
        if s.verdict_kind != kind:
            rest.append(s)
            break
        prev_t = s.t if prev_t is None else prev_t
        start = s
        if prev_t - s.t >= hold_s:
            return None  # the run had held already: nothing changes now
    if latest.t - start.t < hold_s:
        return None
    # the run just reached the hold: which verdict held before it?
    runs: list[list[Any]] = [rest] if rest else []
    for s in mine:
        if s.verdict_kind == runs[-1][0].verdict_kind:
            runs[-1].append(s)
            if runs[-1][0].t - s.t >= hold_s:
                return kind if runs[-1][0].verdict_kind != kind else None
        else:
            runs.append([s])
    return kind  # nothing before held: the host's first verdict, the story starts
