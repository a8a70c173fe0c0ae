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
from perftriage.core.report.log_scan import repeat_key

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
    assert "00:01 ready in gpu-a:/var/log/sglang.log" in during
    assert "00:40 nccl in gpu-a:/var/log/sglang.log" in during


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
    assert errors[0].startswith("- 01:10 error in gpu-a:/var/log/sglang.log (×8, last at 01:15)")
    assert "Before the log was followed" not in text  # all of it live
