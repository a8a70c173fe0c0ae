"""The live gap never measures a server with the decode rate of the one
before it. Recorded on a real H200 (scripts/h200_walk.py, 2026-12-05, the
wasted-traffic row: the decode stand-in started outside the cockpit, then
``S phase=fast``): between the restart and the new server's first decode
line the gap samples kept the old 37.6 ms/token (9.05x) with the GPU 100 %
idle, and the fix's outcome read "gap 9.0 → 9.1x =" while the new server
decoded at 4.5 ms (1.07x)."""

from __future__ import annotations

from pathlib import Path
from statistics import median

import pytest

from perftriage.core.analysis.gap_live import live_gap
from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.core.store import transcript

WALK = Path(__file__).resolve().parents[1] / "fixtures" / "h200-walk-wasted-traffic.jsonl"


def gaps_live_and_recorded() -> tuple[float, float, list[tuple[float, float | None, float | None]]]:
    """(the restart's t, the new server's first decode line's t, and for each
    recorded gap.sample: (t, the gap live_gap gives from the state then, the
    gap recorded))."""
    state = SessionState()
    restart = first_decode = None
    out = []
    for e in transcript.read(WALK).events:
        apply(state, e)
        if isinstance(e, ev.ServerEvent) and e.state == "starting" and e.t > 1:
            restart = e.t
        if (restart is not None and first_decode is None and isinstance(e, ev.LogLines)
                and any("Decode batch" in line for line in e.lines)):
            first_decode = e.t
        if isinstance(e, ev.GapSample):
            r = live_gap(state, "h200")
            out.append((e.t, r.gap if r is not None else None, e.gap))
    assert restart is not None and first_decode is not None
    return restart, first_decode, out


def test_the_old_servers_rate_is_not_the_new_servers_gap():
    restart, first_decode, rows = gaps_live_and_recorded()
    before = [(live, rec) for t, live, rec in rows if t < restart]
    between = [(live, rec) for t, live, rec in rows if restart < t < first_decode]
    after = [(live, rec) for t, live, rec in rows if t > first_decode]
    assert len(before) >= 10 and len(between) >= 3 and len(after) >= 3
    # the old server, live: the same gap as recorded
    assert all(live == pytest.approx(rec, abs=0.01) for live, rec in before)
    assert median(rec for _, rec in before) == pytest.approx(9.05, abs=0.1)
    # what was recorded between: the old rate (the defect); now no gap until it decodes
    assert all(rec == pytest.approx(9.05, abs=0.05) for _, rec in between)
    assert all(live is None for live, _ in between)
    # the new server's own rate once it decodes: near its floor
    assert all(live is not None and live < 1.3 for live, _ in after)
    news = [live for live, _ in between + after if live is not None]
    assert median(news) < 1.3  # the after phase's median: 9.0 → about 1.1x, no longer "="


def test_an_endpoint_that_stopped_answering_measures_nothing():
    """A server perftriage did not start (no server event) dies: its
    /metrics goes unanswered and its last mean ITL is not the gap's."""
    from perftriage.core.analysis.gap_live import engine_rate
    from tests.ui.test_engine_report import engine_events

    state = SessionState()
    for e in engine_events("sglang-0.5", ["a", "b"]):
        e.host, e.source = "h", "engine:h"
        apply(state, e)
    tps, batch = engine_rate(state, "h")
    assert tps is not None and batch == 32
    apply(state, ev.EngineStatus(source="engine:h", host="h", state="retrying",
                                 reason="connection refused", t=state.last_t + 1))
    assert engine_rate(state, "h") == (None, None)
