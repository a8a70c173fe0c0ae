"""Log search: a pattern from any source (typed in the
Logs pane, a finding's ``log-search`` step read from a shared transcript,
auto mode's log scan) is searched by RE2 under a time bound; a pattern RE2
refuses is an error line, never an exit.

``(.|.)*QQQQ`` backtracks for ever in Python's ``re`` on a line of 40
characters without a Q: before the fix each of these tests hung until the
suite's timeout."""

from __future__ import annotations

import itertools

import pytest

from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.core.search import Budget, PatternError, compile_search, pattern_error
from perftriage.core.view.evidence import candidates
from perftriage.core.view.log_window import LogIndex
from perftriage.services.investigation.session import Session
from perftriage.services.triage.next_step import log_scan
from tests.support.helpers import capture_notifications, replay_app, wait_for

EVIL = "(.|.)*QQQQ"
REFUSED = ["(", "(?=x)abc", r"(a)\1", "a{1000}{1000}", "x" * 5000]


def _state(lines: list[str], host: str = "gpu-a") -> SessionState:
    state = SessionState()
    apply(state, ev.LogSourceOpened(t=0.0, source_id="l1", host=host, path="/var/log/server.log"))
    apply(state, ev.LogLines(t=1.0, source_id="l1", lines=lines))
    return state


def _index(lines: list[str]) -> LogIndex:
    index = LogIndex(_state(lines), "l1")
    index.refresh()
    return index


LINES = ["a" * 40 + f" decode {i}" for i in range(2000)]


def test_the_catastrophic_pattern_searches_a_ring_at_once() -> None:
    index = _index(LINES + ["a" * 40 + " QQQQ"])
    index.set_search(EVIL)
    assert [index.line(index.rows[s - index.first_seq]) for s in index.matches] \
        == ["a" * 40 + " QQQQ"]
    index.set_filters(filter_in=EVIL)  # the filters are patterns from the user too
    assert len(index) == 1


@pytest.mark.parametrize("pattern", REFUSED)
def test_a_pattern_re2_refuses_is_one_line_and_the_search_stays(pattern: str) -> None:
    index = _index(LINES)
    index.set_search("decode 7")
    before = list(index.matches)
    why = pattern_error(pattern)
    assert why is not None and "\n" not in why and len(why) < 200
    with pytest.raises(PatternError):
        index.set_search(pattern)
    assert index.search is not None and list(index.matches) == before


def test_the_search_of_a_whole_ring_stops_at_its_budget_newest_first() -> None:
    ticks = itertools.count()
    budget = Budget(seconds=10, clock=lambda: float(next(ticks)))  # 1 s per clock reading
    index = _index(LINES)
    index.set_search("decode", budget)
    assert budget.cut and index.search_cut_seq is not None
    searched = index.end_seq - index.search_cut_seq
    assert 0 < searched < len(LINES)
    # what was searched is the newest rows, and all of them matched
    assert list(index.matches) == list(range(index.search_cut_seq, index.end_seq))
    index.set_search("decode")  # the real clock: a search this small is whole
    assert index.search_cut_seq is None and len(index.matches) == len(LINES)


def test_auto_modes_log_scan_takes_a_recorded_pattern_as_rE2() -> None:
    session = Session(state=_state(LINES + ["x QQQQ"]))
    assert log_scan(session, "gpu-a", EVIL) \
        == "log scan /(.|.)*QQQQ/ on gpu-a: 1 line(s) match; latest: x QQQQ"
    said = log_scan(session, "gpu-a", "(\x1b]0;pwned\x07")
    assert said.startswith("log scan /(␛]0;pwned␇/ on gpu-a: not a pattern RE2 takes: ")
    assert "\x1b" not in said


def test_the_evidence_pickers_query_is_rE2_too() -> None:
    state = _state(LINES + ["x QQQQ"])
    assert candidates(state, EVIL).log_matches == 1
    assert candidates(state, "(?=x)").log_matches == 0  # refused: searched as text


def test_a_smart_case_pattern_still_matches_as_typed() -> None:
    assert compile_search("decode").search("DECODE batch")
    assert not compile_search("Decode").search("DECODE batch")


async def test_the_logs_pane_takes_a_hostile_pattern_from_a_finding_without_exiting() -> None:
    """What Enter on a recorded ``log-search`` step does (the Triage view
    calls ``LogsPane.search_host``), in a replay: the evil pattern searches
    at once, a refused one is an error line in the pane's status row."""
    from perftriage.ui.widgets.logs import LogsPane

    app = replay_app()
    said = capture_notifications(app)
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.screen.query_one(LogsPane)
        assert pane.search_host("gpu-a", EVIL)
        await pilot.pause()
        assert "search /(.|.)*QQQQ/: 0 matches" in pane.view.status()
        assert pane.search_host("gpu-a", "(\x9b31m")
        await pilot.pause()
        status = pane.view.status()
        assert "error: search /(<9b>31m/: not a pattern RE2 takes: missing )" in status
        assert "search /(.|.)*QQQQ/" in status  # the previous search stays
        await wait_for(lambda: any("not a pattern RE2 takes" in m for m, _ in said))
        assert app.is_running
        pane.view.apply_filter("in", "(?<=x)")
        await pilot.pause()
        assert "error: filter in /(?<=x)/" in pane.view.status() and app.is_running
