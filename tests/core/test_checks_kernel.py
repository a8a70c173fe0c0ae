"""kernel["REGEX"].bw_pct / .gbs / .time_pct / .verdict read the session's
latest ncu probe (the real H200 probe record, tests/fixtures/ncu/), joined
with the latest profile capture for the time share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perftriage.core.checks.expr import CheckError, compile_check
from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.core.profile.summarize import summarize_files
from tests.core.test_checks_profile import verdict_of

FIXTURES = Path(__file__).parents[1] / "fixtures"
RECORD = json.loads((FIXTURES / "ncu" / "probe-ncu-moe-step.json").read_text())
TRACE = FIXTURES / "profile" / "eager-TP-0.trace.json.gz"


def with_ncu(state: SessionState, pid: str = "p1", detail=None) -> SessionState:
    apply(state, ev.ProbeQueued(probe_id=pid, host="gpu-a", kind="ncu", args=RECORD["args"]))
    apply(state, ev.ProbeStarted(probe_id=pid))
    apply(state, ev.ProbeFinished(probe_id=pid, status="ok", exit_status=0,
                                  summary="ncu", detail=RECORD["detail"] if detail is None
                                  else detail))
    return state


def test_no_ncu_result_is_no_data():
    verdict, reason = verdict_of(SessionState(), 'kernel["fused_moe"].bw_pct < 60')
    assert verdict == "no data" and "no ncu probe" in reason


@pytest.mark.parametrize("check, expected", [
    ('kernel["fused_moe"].bw_pct < 60', "supported"),  # 49.9 % of the H200's peak
    ('kernel["fused_moe"].bw_pct > 80', "refuted"),
    ('kernel["fused_moe"].gbs > 2300 and kernel["fused_moe"].gbs < 2500', "supported"),
    ('kernel["sdpa"].verdict == "near-roofline"', "supported"),
    ('kernel["fused_moe"].verdict == "memory-bound"', "supported"),
    ('kernel["fused_moe"].time_pct > 3 and kernel["fused_moe"].time_pct < 6', "supported"),
])
def test_checks_settle_on_the_real_probe(check, expected):
    assert verdict_of(with_ncu(SessionState()), check)[0] == expected


def test_a_regex_that_matches_nothing_is_no_data():
    verdict, reason = verdict_of(with_ncu(SessionState()), 'kernel["cutedsl"].bw_pct > 1')
    assert verdict == "no data" and "no kernel of p1 matches" in reason


def test_the_newest_ncu_probe_counts():
    state = with_ncu(SessionState())
    later = json.loads(json.dumps(RECORD["detail"]))
    for k in later["ncu"]["kernels"]:
        if k["name"] == "fused_moe_kernel":
            k["pct_of_peak"] = 95.0  # fused and fixed
    with_ncu(state, "p2", later)
    assert verdict_of(state, 'kernel["fused_moe"].bw_pct > 90')[0] == "supported"


def test_time_share_comes_from_the_profile_capture_when_it_has_the_kernel():
    summary = summarize_files([TRACE])
    state = with_ncu(SessionState())
    apply(state, ev.ProfileCaptured(capture_id="prof1", host="gpu-a", summary=summary))
    # gatherTopK: one kernel in both, named differently (at::native::sbtopk vs sbtopk)
    prof = next(k.pct for k in summary.kernels if "gatherTopK" in k.name)
    ncu_own = next(k["time_pct"] for k in RECORD["detail"]["ncu"]["kernels"]
                   if "gatherTopK" in k["name"])
    assert abs(prof - ncu_own) > 0.5  # the two shares differ: the check tells which it read
    check = f'kernel["gatherTopK"].time_pct > {prof - 0.01} and kernel["gatherTopK"].time_pct < {prof + 0.01}'
    assert verdict_of(state, check)[0] == "supported"


def test_a_bad_regex_is_refused_when_the_check_is_written():
    with pytest.raises(CheckError, match="not a regular expression"):
        compile_check('kernel["(fused"].bw_pct < 50')
    with pytest.raises(CheckError, match="kernel"):
        compile_check('kernel.bw_pct < 50')
