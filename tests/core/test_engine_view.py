"""The engine strip and the latency heatmap, cell by cell."""

from __future__ import annotations

from perftriage.core.model.engine_state import EngineState, LatencyRow, add_sample
from perftriage.core.parse.engine_metrics import parse_exposition
from perftriage.core.view.engine_view import (
    EMPTY,
    LABEL_WIDTH,
    P50_MARK,
    P99_MARK,
    heatmap_lines,
    strip_text,
)
from tests.support.helpers import FIXTURES


def engine(base: str = "sglang-0.5") -> EngineState:
    es = EngineState("engine:n1", "n1", conn_state="up")
    for t, p in ((0.0, "a"), (10.0, "b")):
        add_sample(es, t, parse_exposition((FIXTURES / "metrics" / f"{base}-{p}.prom").read_text()))
    return es


def test_strip_shows_the_window_figures():
    text = strip_text(engine()).plain
    assert text.startswith("engine:n1 sglang · ITL p50/p99 10/58 ms · 14.3 ms/tok · "
                           "gen 500 tok/s · run 32 · q 5 · KV 50%")
    assert "TTFT p90 600 ms" in text and "hit 25%" in text and "accept 3.10" in text


def test_strip_says_why_it_is_not_up():
    es = EngineState("engine:n1", "n1", conn_state="retrying",
                     reason="connection refused \x1b[2J(retry in 2s)")
    text = strip_text(es).plain
    assert text == "engine:n1 retrying: connection refused ␛[2J(retry in 2s)"


def test_heatmap_cells():
    rows = list(engine().itl_rows)  # one interval: 50 x 9 ms, 40 x 12 ms, 10 x 50 ms
    lines = heatmap_lines(rows, width=10, height=6)
    assert len(lines) == 6 and all(len(ln) == LABEL_WIDTH + 10 for ln in lines)
    last = [ln.plain[-1] for ln in lines]  # newest column, top to bottom
    assert last[0] == P99_MARK and last[-1] == P50_MARK  # p99 58 ms high, p50 10 ms low
    # nine empty columns of padding on the left: time runs left to right
    assert all(ln.plain[LABEL_WIDTH:-1] == " " * 9 for ln in lines)
    # the busiest band (50 tokens, bottom) gets the brightest shade
    bottom = lines[-1].spans[-1].style
    assert bottom.bgcolor is not None and bottom != EMPTY


def test_heatmap_scrolls_and_keeps_width():
    row = list(engine().itl_rows)[0]
    rows = [LatencyRow(t=float(i), bounds=row.bounds, counts=row.counts, p50=row.p50,
                       p90=row.p90, p99=row.p99) for i in range(50)]
    lines = heatmap_lines(rows, width=20, height=4)
    assert all(len(ln) == LABEL_WIDTH + 20 for ln in lines)
    assert lines[-1].plain[LABEL_WIDTH:] == P50_MARK * 20


def test_heatmap_without_decode_steps():
    assert heatmap_lines([], 10, 4)[0].plain == "inter-token latency: no decode steps yet"


def test_strip_names_the_ranks_when_they_disagree():
    assert "run by engine=0:10 engine=1:6" in strip_text(engine("vllm-0.10")).plain
    assert "run by" not in strip_text(engine("sglang-0.5")).plain  # TP ranks repeat each other
