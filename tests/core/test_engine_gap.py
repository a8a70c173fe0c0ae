"""The live gap (the Gap view and gap.sample) takes the measured
ms/token from the engine's mean inter-token latency when a /metrics endpoint
reports it, and from the log otherwise."""

from __future__ import annotations

import pytest

from perftriage.core.analysis.gap_live import engine_rate, live_gap
from perftriage.core.model.reducer import replay
from perftriage.core.store import transcript
from tests.ui.test_engine_report import engine_events
from tests.ui.test_gap_view import cut_transcript


def test_measured_ms_is_the_itl_when_the_endpoint_is_there(tmp_path):
    events = list(transcript.read(cut_transcript(tmp_path, "fast")).events)
    from_log = live_gap(replay(events), "localhost")
    assert from_log is not None and from_log.measured_ms is not None
    engine = [e for e in engine_events("sglang-0.5", ["a", "b"])]
    for e in engine:  # the endpoint on the same host, after the log's last line
        e.host, e.source = "localhost", "engine:localhost"
        e.t += events[-1].t
    state = replay(events + engine)
    r = live_gap(state, "localhost")
    # the window's mean ITL: (50 x 9 + 40 x 12 + 10 x 50) ms / 100, a step of 32 requests;
    # the page reports speculative decoding (accept length 3.10 tokens a step), so the
    # gap is per step: 3.1 tokens' ITL, and the label says so
    assert r.measured_ms == pytest.approx(14.3 * 3.1)
    assert r.batch == 32 and r.ms_label == "ms/step/req@bs32" and r.accept_len == 3.1
    assert r.floor_ms == from_log.floor_ms  # the floor does not depend on where ms comes from


def test_no_endpoint_no_engine_rate():
    assert engine_rate(replay([])) == (None, None)
