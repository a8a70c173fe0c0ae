"""profile.* signals read the session's latest profile capture (the real H200
graph trace): a bucket's share and its top kernel name settle a check."""

from __future__ import annotations

from pathlib import Path

from perftriage.core.checks.verdicts import Evaluator
from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.core.profile.summarize import summarize_files

TRACE = Path(__file__).parents[1] / "fixtures" / "profile" / "graph-TP-0.trace.json.gz"


def verdict_of(state: SessionState, check: str) -> tuple[str, str]:
    apply(state, ev.HypothesisAdded(hyp_id="h1", title="t", check=check))
    changes = Evaluator().tick(state, 1.0)
    for c in changes:
        apply(state, c)
    v = next(iter(state.hypothesis("h1").verdicts.values()))
    return v.verdict, v.reason


def test_no_capture_is_no_data():
    verdict, reason = verdict_of(SessionState(), 'profile.bucket["gemm"].pct > 1')
    assert verdict == "no data" and "no profile captured yet" in reason


def test_a_capture_settles_bucket_and_top_kernel_checks():
    summary = summarize_files([TRACE])
    state = SessionState()
    apply(state, ev.ProfileCaptured(capture_id="prof1", host="localhost", summary=summary))
    gemm = summary.bucket_pct("gemm")
    assert gemm > 1
    assert verdict_of(state, f'profile.bucket["gemm"].pct > {gemm - 0.5}')[0] == "supported"
    state2 = SessionState()
    apply(state2, ev.ProfileCaptured(capture_id="prof1", host="localhost", summary=summary))
    assert verdict_of(state2, 'profile.bucket["gemm"].top_name matches "nvjet"')[0] == "supported"
    state3 = SessionState()
    apply(state3, ev.ProfileCaptured(capture_id="prof1", host="localhost", summary=summary))
    assert verdict_of(state3, 'profile.top.name matches "cutedsl"')[0] == "refuted"
