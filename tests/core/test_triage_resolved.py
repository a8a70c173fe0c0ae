"""Issue 49.3: "resolved" only on the cause's own evidence.

On the H200 loop, launch-bound read "resolved — gap 20.9 → 6.9x" after a
restart that only removed the host stall: the server was still eager and
no capture had been taken since. Here the real H200 stand-in recording
(decode 13.5 → 108 tok/s at 36 s) carries the real eager H200 capture
before a restart at 36 s: throughput rises, the capture is not taken again."""

from __future__ import annotations

from perftriage.core.compare.load import load
from perftriage.core.compare.recording import Recording
from perftriage.core.model import events as ev
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.triage.after_fix import signal_verdict
from perftriage.core.triage.phases import triage
from tests.core.test_triage_real import EAGER, FIX, GRAPH
from tests.core.test_triage_rules import decode_line


def _loop() -> Recording:
    rec = load(FIX / "session-h200-standin.jsonl")
    rec.feed(ev.ProfileCaptured(capture_id="prof1", host="h200", summary=summarize_files(EAGER),
                                t=20.0))
    rec.feed(ev.ServerEvent(server="sglang", host="h200", state="starting", t=36.0))
    return rec


def _h200(rec: Recording):
    return [p for p in triage(rec) if p.host == "h200"]


def test_throughput_rising_is_the_outcome_not_the_resolution():
    before, after = _h200(_loop())
    assert before.findings[0].cause == "launch-bound" and before.findings[0].confirmed
    line = next(e for e in after.earlier if e.cause == "launch-bound")
    assert line.state == "unknown"
    assert line.text.startswith("launch-bound: not known yet — a profile capture not taken "
                                   "since the change (Enter takes it); outcome: decode ")
    assert "▲" in line.outcome  # the change helped: said beside it, not as the resolution
    assert line.next is not None and line.next.kind == "capture"
    assert before.findings[0].resolved is None
    # the phase after carries the lead whose Enter takes the capture
    lead = next(f for f in after.findings if f.cause == "launch-bound")
    assert not lead.confirmed and lead.next is not None and lead.next.kind == "capture"
    assert "not known yet" in lead.title


def _captured_again(trace):
    """The loop with a second capture at 1:00 of ``trace``: (the phase
    before, the phase after, the after's line on launch-bound)."""
    rec = _loop()
    rec.feed(ev.ProfileCaptured(capture_id="prof2", host="h200", summary=summarize_files(trace),
                                t=60.0))
    before, after = _h200(rec)
    return before, after, next(e for e in after.earlier if e.cause == "launch-bound")


def test_the_capture_taken_again_resolves_it():
    before, after, line = _captured_again(GRAPH)
    assert line.state == "resolved"
    assert line.text.startswith("launch-bound: resolved — capture prof2 at 1:00 no longer "
                                   "finds it; outcome: decode ")
    assert before.findings[0].resolved == line.text
    assert not [f for f in after.findings if f.cause == "launch-bound"]


def test_the_capture_taken_again_still_eager_says_still_there():
    _, _, line = _captured_again(EAGER)
    assert line.state == "still" and "still there" in line.text


def _decode(rec: Recording, t0: int, t1: int, running: int, gen: float, *,
            retract: bool = False) -> None:
    rec.feed(ev.LogSourceOpened(source_id="l1", host="gpu", path="/srv/log", t=0.0))
    for t in range(t0, t1):
        lines = [decode_line(running, 0, 0.97 if retract else 0.5, gen)]
        if retract:
            lines.append("KV cache pool is full. Retract requests. #retracted_reqs: 1")
        rec.feed(ev.LogLines(source_id="l1", lines=lines, t=float(t)))


def test_the_outcome_waits_for_its_readings_and_says_so():
    rec = Recording()
    _decode(rec, 1, 30, 48, 900.0, retract=True)
    rec.feed(ev.ServerEvent(server="s", host="gpu", state="starting", t=30.0))
    _decode(rec, 33, 36, 48, 2900.0)
    before, after = triage(rec, 0, 36)
    line = next(e for e in after.earlier if e.cause == before.findings[0].cause)
    assert "?" in line.outcome and "waits for 10 readings a side" in line.outcome


def test_kv_pressure_reads_per_request_time_at_like_batch():
    """The batch shrank (48 → 12 running half the time) and the server's tok/s
    fell with it: per request, at like batch, the step is no slower."""
    rec = Recording()
    _decode(rec, 1, 30, 48, 960.0, retract=True)
    rec.feed(ev.ServerEvent(server="s", host="gpu", state="starting", t=30.0))
    for t in range(31, 90):  # every other second a quarter of the batch, at a quarter of the rate
        _decode(rec, t, t + 1, 12 if t % 2 else 48, 240.0 if t % 2 else 960.0)
    before, after = triage(rec, 0, 90)
    assert before.findings[0].cause == "kv-pressure"
    line = next(e for e in after.earlier if e.cause == "kv-pressure")
    assert line.outcome.startswith("per-request time per token at like batch (48 running)")
    assert "▼" not in line.outcome
    assert line.state == "resolved", line.text
    # the server's tok/s alone would have said the step got slower
    assert "▼" in signal_verdict(rec, "gpu", before, after)
