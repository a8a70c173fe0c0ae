"""kv-pressure's title counts what was seen: in the first
seconds of a full cache it said "retracted (0.0 a minute)"; now "3
retractions in the last 12 s", or "no retraction yet" while the cache is
full and none was seen."""

from __future__ import annotations

from tests.core.test_triage_rules import RETRACT, decode_line, log_recording, top


def test_the_first_seconds_count_the_retractions_seen():
    lines = [(float(t), [decode_line(60, 6, 0.98)] + ([RETRACT] if t % 4 == 0 else []))
             for t in range(1, 13)]
    kv = next(f for f in top(log_recording(lines), 0, 12) if f.cause == "kv-pressure")
    assert kv.title == "the KV cache is full: 3 retractions in the last 12 s and requests wait"
    assert "a minute" not in kv.title and "a minute" not in kv.evidence[0].text


def test_a_full_cache_with_no_retraction_yet_says_so():
    lines = [(float(t), [decode_line(60, 0, 0.99)]) for t in range(1, 11)]
    kv = next(f for f in top(log_recording(lines), 0, 10) if f.cause == "kv-pressure")
    assert kv.title == "the KV cache is full: no retraction yet in the last 10 s"


def test_over_minutes_the_rate_stays_beside_the_count():
    lines = [(float(t), [decode_line(60, 12, 0.99)] + ([RETRACT] if t % 10 == 0 else []))
             for t in range(1, 181)]
    kv = next(f for f in top(log_recording(lines)) if f.cause == "kv-pressure")
    assert "18 retractions in the last 3 min" in kv.title
    assert "(6.0 a minute)" in kv.evidence[0].text
