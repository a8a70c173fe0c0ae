"""The cockpit's baseline (services/baseline.py) fed the real H200 run
(``tests/fixtures/gpm/h200-run``) event by event, as the live session feeds
it: a baseline marked on the slow phase, the last 30 s of the fast phase
against it with the verdicts of ``perftriage compare``; the forms ``b``
takes; a baseline older than the live recording read from the transcript."""

from __future__ import annotations

import pytest

from perftriage.core.model import events as ev
from perftriage.core.model.state import SessionState
from perftriage.services.compare.baseline import Baseline, BaselineError
from perftriage.services.investigation.session import RECORDED, Session
from tests.support.compare_recordings import real_events, two_runs


def session_with(events) -> Session:
    # a recorded-mode session keeps the events' own times (a live one stamps its clock)
    session = Session(state=SessionState(name="h200"), mode=RECORDED)
    for e in events:
        session.emit(e)
    return session


def metric(result, name, host="localhost"):
    return next(r for r in result["metrics"] if r["metric"] == name and r["host"] == host
                and r["gpu"] is None)


def test_the_fast_phase_against_a_baseline_on_the_slow_one():
    events = real_events()
    session = Session(state=SessionState(name="h200"), mode=RECORDED)
    baseline = Baseline(session)
    for e in [e for e in events if e.t <= 33.9]:
        session.emit(e)
    assert baseline.result() is None  # nothing marked
    marked = baseline.mark("5-33")
    assert (marked.start, marked.end, marked.label) == (5.0, 33.0, "0:05–0:33")
    assert session.state.baseline == marked
    for e in [e for e in events if e.t > 33.9]:
        session.emit(e)
    out = baseline.result()
    assert out is not None
    assert out["b"]["label"] == "last 30 s" and out["b"]["to"] == pytest.approx(80.58, abs=0.1)
    assert metric(out, "decode_tps")["verdict"] == "improved"
    assert metric(out, "traffic_ratio")["verdict"] == "improved"
    assert out["summary"].startswith("B is 8.0× faster than A")
    assert baseline.result() is out  # once a session second
    baseline.clear()
    assert session.state.baseline is None and baseline.result() is None


def test_forms_b_takes():
    session = session_with(real_events())
    baseline = Baseline(session)
    now = session.state.last_t
    w = baseline.window_for("now")
    assert (w.start, w.end) == (pytest.approx(now - 30), now)
    assert baseline.window_for("1:00-").start == 60.0
    with pytest.raises(BaselineError, match="run 1 only"):
        baseline.window_for("run 2")
    with pytest.raises(BaselineError, match="long"):
        baseline.window_for("5:00-")
    with pytest.raises(BaselineError, match="FROM-TO"):
        baseline.window_for("soon")


def test_a_run_of_a_continued_investigation_is_read_from_its_transcript(tmp_path):
    from perftriage.core.store import stream

    path = two_runs(tmp_path / "moe.jsonl")
    _, offset = stream.header_and_offset(path)
    session = Session(state=SessionState(name="moe"), mode=RECORDED)
    session.source_path = path
    run1 = [e for _, e in stream.iter_events(path, offset) if e.t < 34.0]
    run2 = [e for _, e in stream.iter_events(path, offset) if e.t >= 34.0]
    for e in run1:
        session.emit(e)
    baseline = Baseline(session)  # it starts listening in run 2 (a continued investigation)
    for e in run2[:3]:
        session.emit(e)
    assert isinstance(session.state.segments[-1], ev.SegmentStarted)
    marked = baseline.mark("run 1")
    assert (marked.start, marked.end, marked.label) == (0.0, 34.0, "run 1")
    for e in run2[3:]:
        session.emit(e)
    out = baseline.result()
    assert out is not None
    assert metric(out, "decode_tps")["a"]["median"] == pytest.approx(13.59, abs=0.05)
    assert metric(out, "decode_tps")["verdict"] == "improved"
    assert [c["text"] for c in out["changes"]["args"]] == [
        "--moe-runner-backend triton → flashinfer_cutedsl"]
