"""The log view's lnav-like helpers, without Textual: "match k of N" and
jumping to a time."""

from __future__ import annotations

from datetime import datetime

import pytest

from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.core.view.log_window import LogIndex, parse_jump_time


def _index(lines: list[str]) -> LogIndex:
    st = SessionState(log_ring=1000)
    apply(st, ev.LogSourceOpened(source_id="a", host="h", path="a.log"))
    apply(st, ev.LogLines(source_id="a", lines=lines))
    ix = LogIndex(st, "a")
    ix.refresh()
    return ix


LINES = [f"[2026-11-28 09:{m:02d}:00 TP0] step {m}" + (" ERROR" if m % 3 == 0 else "")
         for m in range(10, 40)]
LINES.insert(5, "Traceback (most recent call last):")  # no timestamp of its own


def test_match_k_of_n_follows_the_cursor():
    ix = _index(LINES)
    ix.set_search("ERROR")
    n = len([x for x in LINES if "ERROR" in x])
    assert ix.match_position(0) == (0, n)  # before the first match
    first = ix.find(-1, +1)
    assert ix.match_position(first) == (1, n)
    second = ix.find(first, +1)
    assert ix.match_position(second) == (2, n)
    assert ix.match_position(second + 1) == (2, n)  # between matches: the one above
    ix.set_search(None)
    assert ix.match_position(3) == (0, 0)


def test_jump_to_a_time_bisects_the_rows():
    ix = _index(LINES)
    row = ix.row_at_time(datetime(2026, 11, 28, 9, 20, 30))
    assert ix.row(row)[1].startswith("[2026-11-28 09:21:00")
    assert ix.row_at_time(datetime(2026, 11, 28, 8, 0)) == 0
    assert ix.row_at_time(datetime(2026, 11, 28, 10, 0)) is None  # after the newest line
    # a line without a timestamp takes the one above it
    assert ix.row(ix.row_at_time(datetime(2026, 11, 28, 9, 15)))[1].startswith(
        "[2026-11-28 09:15:00")


def test_time_input_forms():
    ref = datetime(2026, 11, 28, 9, 39)
    assert parse_jump_time("09:21", ref) == datetime(2026, 11, 28, 9, 21)
    assert parse_jump_time("9:21:30", ref) == datetime(2026, 11, 28, 9, 21, 30)
    assert parse_jump_time("11-27 23:59", ref) == datetime(2026, 11, 27, 23, 59)
    assert parse_jump_time("2025-01-02 03:04:05", ref) == datetime(2025, 1, 2, 3, 4, 5)
    with pytest.raises(ValueError, match="HH:MM"):
        parse_jump_time("yesterday", ref)
    with pytest.raises(ValueError):
        parse_jump_time("25:61", ref)
