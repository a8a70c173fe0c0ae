"""Filter / search / error navigation over the bounded ring (no Textual)."""

from __future__ import annotations

from perftriage.core.model import events as ev
from perftriage.core.view.log_window import ALL, LogIndex
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState


def state_with(ring: int = 1000) -> SessionState:
    st = SessionState(log_ring=ring)
    apply(st, ev.LogSourceOpened(source_id="a", host="h", path="a.log"))
    apply(st, ev.LogSourceOpened(source_id="b", host="h", path="b.log"))
    return st


def texts(ix: LogIndex) -> list[str]:
    return [ix.row(i)[1] for i in range(len(ix))]


def test_filters_keep_buffered_lines() -> None:
    st = state_with()
    apply(st, ev.LogLines(source_id="a", lines=["INFO x", "ERROR boom", "INFO y", "debug z"]))
    ix = LogIndex(st, "a")
    ix.refresh()
    assert texts(ix) == ["INFO x", "ERROR boom", "INFO y", "debug z"]
    ix.set_filters(filter_in="info")
    assert texts(ix) == ["INFO x", "INFO y"]
    ix.set_filters(filter_out="INFO")
    assert texts(ix) == ["ERROR boom", "debug z"]
    apply(st, ev.LogLines(source_id="a", lines=["INFO later", "warn later"]))
    ix.refresh()
    assert texts(ix) == ["ERROR boom", "debug z", "warn later"]
    ix.set_filters()
    assert len(ix) == 6  # nothing was lost by filtering


def test_search_count_next_prev_and_errors() -> None:
    st = state_with()
    apply(st, ev.LogLines(source_id="a", lines=[f"line {i}" for i in range(10)]
                          + ["Traceback (most recent call last):", "line 42", "NCCL error here"]))
    ix = LogIndex(st, "a")
    ix.refresh()
    ix.set_search(r"line 4\d?")
    assert len(ix.matches) == 2  # "line 4", "line 42"
    assert ix.find(0, +1) == 4 and ix.find(4, +1) == 11 and ix.find(11, +1) == 4  # wraps
    assert ix.find(4, -1) == 11
    apply(st, ev.LogLines(source_id="a", lines=["line 4 again"]))
    ix.refresh()
    assert len(ix.matches) == 3
    assert ix.next_error(0, +1) == 10 and ix.next_error(10, +1) == 12 and ix.next_error(10, -1) == 12


def test_merged_view_in_arrival_order_and_ring_bound() -> None:
    st = state_with(ring=5)
    apply(st, ev.LogLines(source_id="a", lines=["a1", "a2"]))
    apply(st, ev.LogLines(source_id="b", lines=["b1"]))
    apply(st, ev.LogLines(source_id="a", lines=["a3"]))
    ix = LogIndex(st, ALL)
    ix.refresh()
    assert texts(ix) == ["a1", "a2", "b1", "a3"]
    assert ix.source_of(ix.rows[2]) == "b"
    apply(st, ev.LogLines(source_id="a", lines=[f"x{i}" for i in range(10)]))
    ix.refresh()
    assert texts(ix) == ["x5", "x6", "x7", "x8", "x9"]  # the view is bounded like the ring
    single = LogIndex(st, "a")
    single.refresh()
    assert texts(single) == ["x5", "x6", "x7", "x8", "x9"]


def test_flat_memory_over_many_batches() -> None:
    st = state_with(ring=100)
    ix = LogIndex(st, "a")
    for n in range(200):
        apply(st, ev.LogLines(source_id="a", lines=[f"{n}-{i}" for i in range(50)]))
        ix.refresh()
    assert len(ix) == 100 and len(st.logs["a"].lines) == 100
    assert texts(ix)[-1] == "199-49"


def _scan_errors(ix: LogIndex, start: int, step: int) -> int | None:
    """Reference: walk the rows for the next error line (what the index replaces)."""
    from perftriage.core.view.log_window import _ErrorMatcher

    return ix.find(start, step, _ErrorMatcher)


def test_error_index_agrees_with_a_scan_under_filters_merge_and_eviction() -> None:
    import random

    rng = random.Random(3)
    words = ["INFO ok", "ERROR bad", "Traceback (most recent call last):", "debug x",
             "ValueError: no", "KV cache pool is full. Retract", "warn y", "CUDA out of memory"]
    st = state_with(ring=50)
    views = [LogIndex(st, "a"), LogIndex(st, ALL), LogIndex(st, "b")]
    views[1].set_filters(filter_out="debug")
    views[2].set_filters(filter_in="error|info")
    for step in range(40):
        sid = "a" if step % 3 else "b"
        apply(st, ev.LogLines(source_id=sid, lines=[rng.choice(words) + f" {step}.{k}"
                                                    for k in range(rng.randint(1, 30))]))
        for ix in views:
            ix.refresh()
            n = len(ix)
            for start in (-1, 0, n // 3, n - 1, n):
                for direction in (1, -1):
                    assert ix.next_error(start, direction) == _scan_errors(ix, start, direction)
    # rebuilt by a filter change: the index is rebuilt from the ring as well
    views[0].set_filters(filter_in="bad|memory")
    for start in (-1, 3, len(views[0])):
        assert views[0].next_error(start, 1) == _scan_errors(views[0], start, 1)
    # the source's error list only keeps lines still in its ring
    src = st.logs["a"]
    oldest = src.total_lines - len(src.lines)
    assert all(a >= oldest for a in src.errors)


def test_search_and_filters_match_what_the_row_shows_not_the_raw_bytes() -> None:
    """A coloured line shows "red alert"; a title escape shows as ␛…␇."""
    st = state_with()
    lines = ["\x1b[31mred\x1b[0m alert", "\x1b]2;pwned\x07 title", "plain\tline", "nothing"]
    apply(st, ev.LogLines(source_id="a", lines=lines))
    ix = LogIndex(st, "a")
    ix.refresh()
    ix.set_search("red alert")  # what the row shows: the colour is style
    assert list(ix.matches) == [0]
    ix.set_search("31m")  # the colour sequence's bytes are not shown: no match
    assert list(ix.matches) == []
    ix.set_search("␛")  # the visible stand-in of the title escape
    assert list(ix.matches) == [1]
    ix.set_search("plain   line")  # tabs expand to stops of 4, as shown
    assert list(ix.matches) == [2]
    ix.set_filters(filter_in="alert|␛")
    assert texts(ix) == lines[:2]
    ix.set_filters(filter_out="31m")  # hides nothing: no row shows "31m"
    assert len(ix) == 4
    apply(st, ev.LogLines(source_id="a", lines=["\x1b[1mbold\x1b[0m news"]))  # new lines too
    ix.set_filters()
    ix.set_search("bold news")
    apply(st, ev.LogLines(source_id="a", lines=["\x1b[1mbold\x1b[0m news again"]))
    ix.refresh()
    assert list(ix.matches) == [4, 5]


def test_the_evidence_picker_finds_log_lines_by_what_they_show() -> None:
    from perftriage.core.view.evidence import candidates

    st = state_with()
    apply(st, ev.LogLines(source_id="a", lines=["\x1b[31mred\x1b[0m alert", "31m"]))
    found = candidates(st, "red alert")
    assert [c.ref_id for c in found.items if c.ref_kind == "log"] == ["a:1"]
    assert [c.ref_id for c in candidates(st, "31m").items if c.ref_kind == "log"] == ["a:2"]


def test_an_ascii_row_is_cut_by_slicing_exactly_as_strip_crop_cuts_it() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from rich.segment import Segment
    from rich.style import Style
    from textual.strip import Strip

    from perftriage.ui.widgets.log_view import _window

    styles = [Style(color="red"), Style(bold=True), Style()]
    piece = st.tuples(st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
                      st.sampled_from(styles))

    @settings(max_examples=300, deadline=None)
    @given(st.lists(piece, max_size=5), st.integers(0, 60), st.integers(1, 50))
    def check(pieces, start, width) -> None:
        fast = _window(pieces, start, width, styles[2])
        slow = (Strip([Segment(t, s) for t, s in pieces]).crop(start, start + width)
                .extend_cell_length(width, styles[2]))
        assert fast.cell_length == width
        def cells(strip: Strip) -> list:  # (char, style) per cell
            return [(ch, seg.style) for seg in strip for ch in seg.text]

        assert cells(fast) == cells(slow)

    check()
