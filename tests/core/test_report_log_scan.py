"""The report's server-log section: lines from before the log was followed
(its backlog) are shown as such, with the time they were logged, and
repeated lines (every rank, every second) are one line ×N."""

from __future__ import annotations

from datetime import datetime

from perftriage.core.model import events as ev
from perftriage.core.model import reducer
from perftriage.core.model.state import SessionState
from perftriage.core.report import markdown
from perftriage.core.parse.log_time import line_time
from perftriage.core.view.log_kinds import repeat_key

START = "2026-11-28T09:20:00+00:00"


def _state_and_events(batches: list[tuple[float, list[str]]]):
    events: list[ev.Event] = [ev.LogSourceOpened(source_id="l1", host="gpu-a",
                                                 path="/var/log/sglang.log", t=1.0)]
    events += [ev.LogLines(source_id="l1", lines=lines, t=t) for t, lines in batches]
    state = reducer.replay(events, SessionState(name="s", started_at=START))
    return state, events


def test_timestamps_and_repeat_keys():
    assert line_time("[2026-11-28 09:16:31 TP3] x", 2000) == datetime(2026, 11, 28, 9, 16, 31)
    assert line_time("(APIServer pid=7) ERROR 11-28 09:23:12 [x.py:1] y", 2026) == \
        datetime(2026, 11, 28, 9, 23, 12)
    assert line_time("torch.OutOfMemoryError: CUDA out of memory", 2026) is None
    assert repeat_key("[2026-11-28 09:16:31 TP3] CUDA error: illegal address") == \
        repeat_key("[2026-11-28 09:17:02.250 TP5] CUDA error: illegal address") == \
        "CUDA error: illegal address"


def test_backlog_is_told_apart_on_a_server_clock_eight_hours_ahead():
    # the server logs in UTC+8: a live line calibrates the offset
    state, events = _state_and_events([
        (1.2, ["[2026-11-28 17:05:00 TP0] RuntimeError: CUDA error: an illegal memory access",
               "[2026-11-28 17:19:59] The server is fired up and ready to roll!"]),
        (30.0, ["[2026-11-28 17:20:29 TP0] Decode batch, #running-req: 1, #token: 885, "
                "token usage: 0.00, cuda graph: True, gen throughput (token/s): 10.28, "
                "#queue-req: 0"]),
        (40.0, ["[2026-11-28 17:20:39 TP0] RuntimeError: NCCL timeout in all_reduce"]),
    ])
    text = markdown.render(state, events=events)
    section = text.split("### Notable events", 1)[1].split("### Throughput", 1)[0]
    before, during = section.split("During the session:")
    assert "Before the log was followed" in before
    assert "logged 2026-11-28 17:05:00 error" in before and "illegal memory access" in before
    assert "ready" not in before  # logged seconds before the log was opened: not backlog
    assert "0:01 ready in gpu-a:/var/log/sglang.log" in during
    assert "0:40 nccl in gpu-a:/var/log/sglang.log" in during


def test_repeated_lines_are_grouped_with_first_and_last_time():
    ranks = [f"[2026-11-28 09:21:{10 + k:02d} TP{k}] RuntimeError: CUDA error: an illegal memory "
             "access was encountered" for k in range(8)]
    state, events = _state_and_events([
        (30.0, ["[2026-11-28 09:20:29] The server is fired up and ready to roll!"]),
        (70.0, ranks[:4]),
        (75.0, ranks[4:]),
    ])
    text = markdown.render(state, events=events)
    errors = [x for x in text.splitlines() if "illegal memory access" in x]
    assert len(errors) == 1
    assert errors[0].startswith("- 1:10 error in gpu-a:/var/log/sglang.log (×8, last at 1:15)")
    assert "Before the log was followed" not in text  # all of it live


def test_kv_retractions_are_one_warning_folded_not_a_fatal():
    """SGLang's "KV cache pool is full. Retract requests." (0.5.23
    managers/scheduler.py:4526, logger.warning) with new figures each time:
    one warning line xN in the report, a count in the Logs header, no fatal."""
    kv = [f"[2026-11-28 09:21:{10 + k:02d} TP0] KV cache pool is full. Retract requests. "
          f"#retracted_reqs: {k + 1}, #new_tokens_gained: {900 + 7 * k}, "
          f"#new_token_ratio: 0.{k}000 -> 0.8000" for k in range(5)]
    state, events = _state_and_events([
        (30.0, ["[2026-11-28 09:20:29] The server is fired up and ready to roll!"]),
        (70.0, kv[:2]), (75.0, kv[2:])])
    text = markdown.render(state, events=events)
    found = [x for x in text.splitlines() if "KV cache pool is full" in x]
    assert len(found) == 1 and found[0].startswith("- 1:10 warning in gpu-a:/var/log/sglang.log (×5")
    metrics = state.logs["l1"].metrics
    assert (metrics.errors, metrics.retractions) == (0, 5)


DECODE = ("[2026-11-28 09:{mm:02d}:{ss:02d} TP0] Decode batch, #running-req: {run}, #token: 885, "
          "token usage: 0.01, cuda graph: True, gen throughput (token/s): {tps}, #queue-req: 0")


def _scan(batches: list[tuple[float, str, list[str]]]):
    from perftriage.core.report.log_scan import LogScan

    scan = LogScan(2026)
    for t, source, lines in batches:
        scan.feed(t, source, lines)
    notables, throughput = scan.results(SessionState(name="s", started_at=START))
    return ([(n.source, n.kind, n.line, n.count, n.first, n.last) for n in notables],
            {tp.source: (list(tp.tps), list(tp.batch1)) for tp in throughput})


def test_batches_read_together_say_what_each_line_says_alone():
    # two sources, decode lines (batch 1, larger batches, "01" running, a "Gen
    # Throughput" key the log parser lower-cases, a torn "\r") between notable
    # lines and a traceback whose lines carry no time: fed in batches of 1..7
    # lines (read together, the decode-only runs in one regex) and one line per
    # batch, the notables and throughput samples are the same
    lines = []
    for i in range(2000):
        mm, ss = divmod(i % 3600, 60)
        run = (1, 1, 2, 8, "01")[i % 5]
        lines.append(("l1", DECODE.format(mm=mm, ss=ss, run=run, tps=10 + i % 7 * 0.25)))
        if i % 3 == 0:
            lines.append(("l2", DECODE.format(mm=mm, ss=ss, run=1, tps=0.0 if i % 2 else 9.5)))
        if i % 701 == 0:
            lines += [("l1", f"[2026-11-28 09:{mm:02d}:{ss:02d} TP1] RuntimeError: CUDA error"),
                      ("l1", "Traceback (most recent call last):"),
                      ("l1", '  File "scheduler.py", line 9, in event_loop')]
        if i % 997 == 0:
            lines += [("l2", f"[2026-11-28 09:{mm:02d}:{ss:02d}] Decode batch. #running-req: 1, "
                             "Gen Throughput (token/s): 3.5, #queue-req: 0"),
                      ("l2", DECODE.format(mm=mm, ss=ss, run=1, tps=4.0) + "\r")]
    one_by_one = _scan([(1.0 + k * 0.5, src, [line]) for k, (src, line) in enumerate(lines)])
    grouped, k, size = [], 0, 1
    while k < len(lines):
        src = lines[k][0]
        batch = []
        while k < len(lines) and lines[k][0] == src and len(batch) < size:
            batch.append(lines[k][1])
            k += 1
        grouped.append((1.0 + (k - 1) * 0.5, src, batch))
        size = size % 7 + 1
    together = _scan(grouped)
    # a sighting's session time is its batch's: compare what does not depend on batching
    def strip(result):
        notables, throughput = result
        return [(s, kind, line, count) for s, kind, line, count, _, _ in notables], throughput
    assert strip(together) == strip(one_by_one)
    notables, throughput = one_by_one
    assert [kind for _, kind, *_ in notables] == ["error", "traceback"]
    assert notables[0][3] == 3 and notables[1][3] == 3
    tps, batch1 = throughput["l1"]
    assert len(tps) == 2000 and len(batch1) == 1200  # running 1 and "01"
    l2_tps, l2_batch1 = throughput["l2"]
    assert 3.5 in l2_tps and 4.0 in l2_tps and 0.0 in l2_tps and 0.0 not in l2_batch1


def test_a_line_without_time_takes_the_latest_of_many_batches_before():
    # hundreds of decode batches go unparsed for their time; a traceback line
    # (no timestamp) still gets the newest time the log had before it
    batches = [(1.0 + i, "l1", [DECODE.format(mm=i // 60, ss=i % 60, run=1, tps=10.0)])
               for i in range(700)]
    batches.append((800.0, "l1", ["Traceback (most recent call last):"]))
    notables, _ = _scan(batches)
    (source, kind, line, count, first, last), = notables
    assert kind == "traceback" and first.ts == datetime(2026, 11, 28, 9, 11, 39)


def test_the_clock_is_calibrated_on_a_live_line_with_its_own_time():
    # the server logs in UTC+8; the first live batch has no timestamp (a
    # continuation line): the clock waits for a live line that has one (not
    # the backlog's last time), so the error logged 90 s before the log was
    # opened is told as backlog
    from perftriage.core.report.log_scan import LogScan

    scan = LogScan(2026)
    scan.feed(1.0, "l1", ["[2026-11-28 17:18:30 TP0] RuntimeError: CUDA error: out of bounds"])
    scan.feed(30.0, "l1", ["    continued without a time"])
    scan.feed(40.0, "l1", [DECODE.format(mm=20, ss=39, run=1, tps=10.0).replace("09:", "17:", 1)])
    (notable,), _ = scan.results(SessionState(name="s", started_at=START))
    assert notable.kind == "error" and notable.backlog == 2
