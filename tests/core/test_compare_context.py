"""Comparability on the context a slice ran under: SGLang's #token is what
the running requests hold, compared per running request (issue 41 item 5:
a steady configuration two minutes apart read "not comparable")."""

from __future__ import annotations

from perftriage.core.compare.compare import Side, compare
from perftriage.core.compare.recording import Recording
from perftriage.core.compare.slices import Window
from perftriage.core.model import events as ev


def _line(running: int, tokens: int) -> str:
    return (f"[2026-12-04 10:00:00 TP0] Decode batch, #running-req: {running}, #token: {tokens}, "
            "token usage: 0.40, cuda graph: True, gen throughput (token/s): 900.00, #queue-req: 0")


def _rec(a: tuple[int, int], b: tuple[int, int]) -> Recording:
    rec = Recording()
    rec.feed(ev.LogSourceOpened(source_id="l1", host="gpu", path="/log", t=0.0))
    for t in range(1, 41):
        running, tokens = a if t <= 20 else b
        rec.feed(ev.LogLines(source_id="l1", lines=[_line(running, tokens)], t=float(t)))
    rec.flush()
    return rec


def _warnings(rec: Recording) -> list[str]:
    out = compare(Side(rec, Window("A", 0, 20)), Side(rec, Window("B", 21, 40)))
    return [w for w in out["warnings"] if "context" in w]


def test_the_same_context_per_request_at_another_batch_is_comparable():
    # twice the requests, twice the tokens: the same context per request
    assert _warnings(_rec((32, 96_000), (64, 192_000))) == []


def test_a_longer_context_per_request_is_named_with_its_series():
    [w] = _warnings(_rec((32, 96_000), (32, 960_000)))
    assert w.startswith("context per running request (#token / #running-req) differ: "
                        "3,000 in A, 30,000 in B")
