"""Bytes a decode step must read, in the cockpit: the latest ncu probe (the
real H200 probe record, tests/fixtures/ncu/probe-ncu-moe-step.json: 2 decode
steps of moe_step.py) against the recorded gap's weights — the Gap view's and
the report's lines."""

import json
from pathlib import Path

import pytest

from perftriage.core.analysis.must_read import NO_GAP, NO_STEPS, gap_weights, must_read_lines
from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.core.probe_kinds.kind import ProbeUsageError
from perftriage.core.probe_kinds.ncu_kind import split_args
from perftriage.core.report.markdown import render

RECORD = json.loads((Path(__file__).parents[1] / "fixtures" / "ncu"
                     / "probe-ncu-moe-step.json").read_text())
# moe_step.py's weights a decode step must read (4 layers, bf16; README there)
WEIGHTS_GB = 4 * (100_663_296 + 33_554_432 + 524_288 + 100_663_296) / 1e9
EXPERT_GB = 4 * 100_663_296 / 1e9


def state_with(step_read=None, gap_inputs=None) -> SessionState:
    state = SessionState()
    detail = dict(RECORD["detail"])
    if step_read is not None:
        detail["step_read"] = step_read
    apply(state, ev.ProbeQueued(probe_id="p1", host="gpu-a", kind="ncu", args=RECORD["args"]))
    apply(state, ev.ProbeStarted(probe_id="p1"))
    apply(state, ev.ProbeFinished(probe_id="p1", status="ok", exit_status=0, summary="",
                                  detail=detail))
    if gap_inputs is not None:
        apply(state, ev.GapComputed(floor_ms=0.2, ceiling_tps=5000.0, bandwidth_gbs_total=4800.0,
                                    inputs=gap_inputs))
    return state


def lines(state):
    return must_read_lines(state.probes.values(), state.gaps)


def test_nothing_without_an_ncu_result():
    assert must_read_lines([], []) == []


def test_says_what_is_missing():
    assert lines(state_with()) == [NO_GAP]
    assert lines(state_with(gap_inputs={"weights_gb": WEIGHTS_GB, "gpus": 1})) == [NO_STEPS]


def test_the_gaps_weights_read_once_per_step():
    got = lines(state_with({"steps": 2, "expert_gb": EXPERT_GB},
                           {"weights_gb": WEIGHTS_GB, "gpus": 1, "gpu": "H200"}))
    assert got[0].startswith("bytes a decode step must read (per GPU of 1, the gap's 0.941621 GB")
    assert got[1].startswith("  weights (") and "1.0× the bytes it must" in got[1]
    assert got[2].startswith("  moe (fused_moe_kernel): 1.0× the bytes it must")
    assert got[3].startswith("  gemm (") and "of dense weights" in got[3]


def test_active_params_and_gpus_from_the_gap():
    # 0.4708 B params at 16 bits = the same 0.94162 GB; two GPUs: this one reads all -> 2x
    got = lines(state_with({"steps": 2, "expert_gb": None},
                           {"active_params_b": WEIGHTS_GB / 2, "bits": 16, "gpus": 2}))
    assert len(got) == 2 and "2.0× — it reads its weights twice" in got[1]


@pytest.mark.parametrize("inputs", [{}, {"weights_gb": -1}, {"weights_gb": "x"},
                                    {"active_params_b": 1}])
def test_a_gap_without_usable_weights_is_no_basis(inputs):
    assert gap_weights(inputs) is None


def test_experts_outweighing_the_gap_are_said():
    got = lines(state_with({"steps": 2, "expert_gb": 5.0}, {"weights_gb": 1.0}))
    assert got == ["bytes it must read: --expert-gb 5 must be less than --weights-gb 1 "
                   "(the experts are part of the weights)"]


def test_the_report_carries_them():
    md = render(state_with({"steps": 2, "expert_gb": EXPERT_GB}, {"weights_gb": WEIGHTS_GB}))
    section = md.split("## Kernels against their roofline", 1)[1].split("\n## ", 1)[0]
    assert "- moe (fused_moe_kernel): 1.0× the bytes it must" in section


def test_the_probe_takes_steps_and_experts():
    a = split_args(["--steps", "2", "--expert-gb", "0.4", "--", "python3", "moe_step.py", "2"])
    assert (a.steps, a.expert_gb, a.command) == (2, 0.4, ["python3", "moe_step.py", "2"])
    for bad in (["--steps", "0"], ["--steps", "x"], ["--expert-gb", "-1"], ["--expert-gb", "nan"]):
        with pytest.raises(ProbeUsageError, match=bad[0]):
            split_args([*bad, "--", "python3"])
