"""A comparison's series (issue 42, items 6 and 9): readings fed in any time
order read back in time order, and a reading that arithmetic cannot hold
(1.7e308, inf, nan) is skipped and counted, never summed into a median or
the phase search. Speed is measured by tests/bench/bench_compare_order.py,
not here."""

from __future__ import annotations

import math
import random

from perftriage.core.compare import changepoints
from perftriage.core.compare.recording import MAX_READING, Recording, Series
from perftriage.core.model import events as ev


def readings(s: Series) -> tuple[list[float], list[float]]:
    return list(s.t), list(s.v)


def test_descending_and_shuffled_readings_read_back_in_time_order():
    times = [i * 0.25 for i in range(400)]
    want = Series()
    for t in times:
        want.add(t, t * 2)
    for order in (list(reversed(times)), random.Random(7).sample(times, len(times))):
        s = Series()
        for t in order:
            s.add(t, t * 2)
        assert readings(s) == readings(want)
        assert s.between(10.0, 20.0) == want.between(10.0, 20.0)
        assert s.per_second(0.0, 100.0) == want.per_second(0.0, 100.0)


def test_readings_at_one_time_keep_the_order_they_came_in():
    s = Series()
    s.add(5.0, 1.0)
    s.extend(3.0, [7.0, 8.0, 9.0])  # a batch older than what came before
    s.add(3.0, 10.0)
    s.extend_at([1.0, 2.0], [0.5, 0.6])
    assert readings(s) == ([1.0, 2.0, 3.0, 3.0, 3.0, 3.0, 5.0],
                           [0.5, 0.6, 7.0, 8.0, 9.0, 10.0, 1.0])


def test_a_series_read_then_fed_out_of_order_stays_sorted():
    s = Series()
    for t in (1.0, 2.0, 3.0):
        s.add(t, t)
    assert s.between(0, 10)[0].tolist() == [1.0, 2.0, 3.0]
    s.add(0.5, 0.5)
    s.extend_at([1.5, 2.5], [1.5, 2.5])
    assert s.between(0, 10)[0].tolist() == [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    assert s.v.tolist() == [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]


def test_readings_beyond_the_bound_are_skipped_and_counted():
    s = Series()
    s.add(0.0, 1.7e308)
    s.add(1.0, 2.0)
    s.add(2.0, math.inf)
    s.add(3.0, -1e13)
    s.extend(4.0, [3.0, 1e308, math.nan])
    s.extend_at([5.0, 6.0, 7.0], [4.0, -math.inf, MAX_READING])
    s.extend_at([0.5], [9e99])  # out of order and too big
    assert readings(s) == ([1.0, 4.0, 5.0, 7.0], [2.0, 3.0, 4.0, MAX_READING])
    assert s.skipped == 7


def test_a_recording_fed_in_descending_time_reads_as_ascending():
    events = [ev.GapSample(host="h", gap=1.0 + i % 5, idle_pct=float(i % 7), t=i * 0.5)
              for i in range(200)]
    up, down = Recording(), Recording()
    for e in events:
        up.feed(e)
    for e in reversed(events):
        down.feed(e)
    for key in up.series:
        assert readings(down.series[key]) == readings(up.series[key])
        assert down.readings(*key[:2], 0.0, 100.0) == up.readings(*key[:2], 0.0, 100.0)


def test_huge_gap_readings_never_reach_the_phase_search():
    rec = Recording()
    for i in range(60):
        rec.feed(ev.GapSample(host="h", gap=1.7e308 if i % 3 else 1e308, t=float(i)))
        rec.feed(ev.GapSample(host="h", gap=2.0 if i < 30 else 1.0, t=i + 0.5))
    ts, vs = rec.readings("gap", "h", 0.0, 60.0)
    assert vs == [2.0] * 30 + [1.0] * 30
    assert rec.series[("gap", "h", -1)].skipped == 60
    assert [p.median for p in changepoints.phases(ts, vs)] == [2.0, 1.0]


def test_the_phase_search_holds_readings_at_the_bound():
    values = [MAX_READING] * 20 + [MAX_READING / 2] * 20
    assert changepoints.change_points(values) == [20]


def test_batches_of_times_out_of_order_read_back_sorted():
    s = Series()
    s.extend_at([5.0, 6.0], [5.0, 6.0])
    s.extend_at([7.0, 1.0, 3.0], [7.0, 1.0, 3.0])  # a batch not ascending in itself
    assert readings(s) == ([1.0, 3.0, 5.0, 6.0, 7.0], [1.0, 3.0, 5.0, 6.0, 7.0])


def test_decode_log_batches_in_descending_time_read_as_ascending():
    line = ("[2026-01-01 00:00:00] Decode batch, #running-req: {r}, #token: 100, "
            "token usage: 0.10, gen throughput (token/s): {g}.0, #queue-req: 0")
    batches = [ev.LogLines(source_id="s", lines=[line.format(r=i % 4 + 1, g=100 + i)] * 3,
                           t=i * 0.5) for i in range(600)]
    up, down = Recording(), Recording()
    for rec, order in ((up, batches), (down, batches[::-1])):
        rec.feed(ev.LogSourceOpened(source_id="s", host="h", path="/l", t=0.0))
        for e in order:
            rec.feed(e)
    assert up.series.keys() == down.series.keys()
    for key in up.series:
        assert readings(down.series[key]) == readings(up.series[key]), key


def test_decode_lines_past_the_bound_are_skipped_read_in_bulk_or_batch_by_batch():
    """The bulk read (one findall over many batches) takes at most 12 whole
    digits and adds its values unchecked; a 13- or 15-digit figure (past
    MAX_READING) sends its batch through the general parse, which skips and
    counts it, as reading batch by batch does."""
    from perftriage.core.compare.recording import Recording

    def line(tokens: str, gen: str) -> str:
        return (f"[2026-11-28 09:00:00 TP0] Decode batch, #running-req: 8, #token: {tokens}, "
                f"token usage: 0.10, cuda graph: True, gen throughput (token/s): {gen}, "
                "#queue-req: 0")

    batches = [[line("850", "100.5")] * 2, [line("9" * 13, "1" + "0" * 14)],
               [line("999999999999", "99.5")]]
    got = {}
    for bulk in (True, False):
        rec = Recording(bulk_logs=bulk)
        rec.feed(ev.LogSourceOpened(source_id="l", host="h", path="/log"))
        for i, lines in enumerate(batches):
            rec.feed(ev.LogLines(source_id="l", lines=lines, t=float(i)))
        tps, tokens = rec.series[("decode_tps", "h", -1)], rec.series[("context_tokens", "h", -1)]
        got[bulk] = (list(tps.v), tps.skipped, list(tokens.v), tokens.skipped)
    assert got[True] == got[False]
    tps_v, tps_skipped, tokens_v, tokens_skipped = got[True]
    assert tps_v == [100.5, 100.5, 99.5] and tps_skipped == 1  # 1e14 tok/s: not a reading
    assert tokens_v == [850.0, 850.0, 999999999999.0] and tokens_skipped == 1
