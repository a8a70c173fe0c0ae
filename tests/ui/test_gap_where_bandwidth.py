"""The Gap view's "where the bandwidth goes": the kernels furthest below their
roofline weighted by their share of time, from the latest ncu probe (the
real H200 record)."""

import json

from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.ui.widgets.gap_view import where_lines
from tests.support.helpers import FIXTURES

RECORD = json.loads((FIXTURES / "ncu" / "probe-ncu-moe-step.json").read_text())


def test_nothing_without_an_ncu_result():
    assert where_lines(SessionState()) == []


def test_the_largest_recoverable_share_comes_first():
    state = SessionState()
    apply(state, ev.ProbeQueued(probe_id="p7", host="gpu-a", kind="ncu", args=RECORD["args"]))
    apply(state, ev.ProbeFinished(probe_id="p7", status="ok", exit_status=0, summary="",
                                  detail=RECORD["detail"]))
    lines = [x.plain for x in where_lines(state)]
    assert "where the bandwidth goes" in lines[0] and "p7" in lines[0]
    assert lines[1].strip().startswith("fused_moe_kernel: 4 % of the profiled kernel time at "
                                       "50 % of peak: the largest recoverable share (≈ 2.1 %")
    # near-roofline SDPA and the compute-bound RNG are not where bandwidth is lost
    assert not any("sdpa" in x or "distribution" in x for x in lines)
    # the three memory-bound kernels below their roofline, then what the bytes it must read need
    assert len(lines) == 5 and "record the gap (G)" in lines[4]
