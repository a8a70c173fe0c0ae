"""Bytes a decode step must read, from the roofline's weights, on the real
H200 ncu captures (tests/fixtures/ncu/): per layer wq 100,663,296 B + wo
33,554,432 B + router 524,288 B dense, 8 routed experts 100,663,296 B, K+V
268,435,456 B; 4 layers; the eager CSV holds 2 decode steps, the graph CSV 4."""

from pathlib import Path

import pytest

from perftriage.core.profile import ncu
from perftriage.core.profile.ncu_step_read import StepReadError, step_reads
from perftriage.core.profile.ncu_table import render, step_read_line

FIXTURES = Path(__file__).parents[1] / "fixtures" / "ncu"
LAYERS = 4
DENSE_GB = LAYERS * (100_663_296 + 33_554_432 + 524_288) / 1e9
EXPERT_GB = LAYERS * 100_663_296 / 1e9
KV_GB = LAYERS * 268_435_456 / 1e9
WEIGHTS_GB = DENSE_GB + EXPERT_GB


def summary(name="moe-step-eager.csv"):
    return ncu.summarize_file(str(FIXTURES / name), gpu="H200")


def by_bucket(rows):
    return {r.bucket: r for r in rows}


@pytest.mark.parametrize("name,steps", [("moe-step-eager.csv", 2), ("moe-step-graph.csv", 4)])
def test_each_bucket_reads_its_weights_once(name, steps):
    rows = by_bucket(step_reads(summary(name).kernels, weights_gb=WEIGHTS_GB, steps=steps,
                                expert_gb=EXPERT_GB, kv_gb=KV_GB))
    assert list(rows) == ["weights", "moe", "gemm", "attention"]
    assert {b: r.read_ratio for b, r in rows.items()} == {
        "weights": 1.0, "moe": 1.0, "gemm": 1.0, "attention": 1.0}
    assert rows["moe"].kernels == ["fused_moe_kernel"]
    assert rows["moe"].must_read == 4 * 100_663_296
    # 100.74 MB per fused_moe_kernel launch, 4 layers a step
    assert rows["moe"].read_per_step == pytest.approx(4 * 100.74e6, rel=1e-3)
    # the weight initialisation and casts (GB each) are not GEMM/MoE: left out
    assert not any("distribution" in k or "vectorized_elementwise" in k
                   for k in rows["weights"].kernels)
    assert "1.0× the bytes it must" in step_read_line(rows["moe"])


def test_a_step_that_reads_its_weights_twice():
    # the two eager steps' reads counted as one step: the double read of an unfused step
    rows = by_bucket(step_reads(summary().kernels, weights_gb=WEIGHTS_GB, steps=1,
                                expert_gb=EXPERT_GB))
    assert rows["moe"].read_ratio == 2.0
    assert "2.0× — it reads its weights twice" in step_read_line(rows["moe"])


def test_gpus_split_the_weights():
    # one GPU of two must read half the weights: reading all of them is 2x
    one = step_reads(summary().kernels, weights_gb=WEIGHTS_GB, steps=2, gpus=2)
    assert [r.bucket for r in one] == ["weights"]
    assert one[0].read_ratio == pytest.approx(2.0, abs=0.01)
    assert one[0].must_read == round(WEIGHTS_GB * 1e9 / 2)


def test_too_few_weights_read_says_to_check_the_inputs():
    rows = step_reads(summary().kernels, weights_gb=WEIGHTS_GB, steps=4)
    assert rows[0].read_ratio == 0.5
    assert "check --gpus and --steps" in step_read_line(rows[0])


def test_a_bucket_missing_from_the_capture_gets_no_row():
    # as with `probe ncu --kernel nvjet`: no MoE kernel profiled -> no "0x"
    kernels = [k for k in summary().kernels if "fused_moe" not in k.name]
    rows = by_bucket(step_reads(kernels, weights_gb=WEIGHTS_GB, steps=2, expert_gb=EXPERT_GB))
    assert "moe" not in rows and rows["gemm"].read_ratio == 1.0


def test_n_a_launches_make_the_read_a_lower_bound():
    import msgspec

    kernels = [msgspec.structs.replace(k, na_launches=2) if k.name == "fused_moe_kernel" else k
               for k in summary().kernels]
    rows = by_bucket(step_reads(kernels, weights_gb=WEIGHTS_GB, steps=2, expert_gb=EXPERT_GB))
    assert rows["moe"].na_launches == 2
    assert "2 launches n/a: a lower bound" in step_read_line(rows["moe"])


def test_experts_cannot_outweigh_the_weights():
    with pytest.raises(StepReadError, match="--expert-gb"):
        step_reads(summary().kernels, weights_gb=1.0, steps=2, expert_gb=1.0)


def test_render_lists_the_step_reads():
    import msgspec

    s = summary()
    s = msgspec.structs.replace(s, step_reads=step_reads(
        s.kernels, weights_gb=WEIGHTS_GB, steps=2, expert_gb=EXPERT_GB))
    text = render(s, top=3)
    assert "bytes a decode step must read (per GPU, from the roofline's weights):" in text
    assert "  moe (fused_moe_kernel): 1.0× the bytes it must (402.98 MB read per step, " \
           "402.65 MB of expert weights)" in text
