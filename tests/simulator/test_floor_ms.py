"""``sglang_sim --floor-ms``: the simulator run beside a real GPU takes that
GPU's floor, so its decode step is the scenario's gap times the floor the
gap form computes there (the H200 walk: 20 GB a step over one H200's
4814 GB/s = 4.155 ms), in the log and in /metrics alike; without it, the
simulated GPUs' own floor (FLOOR_MS)."""

from __future__ import annotations

from dataclasses import replace
from statistics import mean

import pytest

from perftriage.core.parse import logparse
from perftriage.simulator import sglang_sim
from perftriage.simulator.scenarios import BYTES_PER_STEP_GB, FLOOR_MS, SCENARIOS
from perftriage.simulator.sglang_metrics import SimulatedSglangMetrics

CAUSE = "kernel-below-roofline"
H200_FLOOR_MS = BYTES_PER_STEP_GB / 4814.0 * 1000.0  # 4.155 ms


def decode_ms(log) -> list[float]:
    """ms per step of a request (the gap form's measured time): running / tokens a second."""
    recs = [logparse.parse_line(ln) for ln in log.read_text().splitlines()]
    return [1000.0 * r.running / r.gen_tps for r in recs
            if isinstance(r, logparse.Metric) and r.kind == "decode"]


def run_sim(tmp_path, *extra: str) -> list[float]:
    log = tmp_path / f"sim{len(extra)}.log"
    assert sglang_sim.main(["--log", str(log), "--rate", "0", "--lines", "200", "--startup-s",
                            "0", "--seed", "3", "--tp", "1", "--scenario", CAUSE, *extra]) == 0
    return decode_ms(log)


def test_the_logs_step_is_the_gap_times_the_floor_given(tmp_path):
    gap = SCENARIOS[CAUSE].planted().gap()
    given = run_sim(tmp_path, "--floor-ms", f"{H200_FLOOR_MS:.4f}")
    own = run_sim(tmp_path)
    assert len(given) > 150 and len(own) > 150
    assert mean(given) == pytest.approx(gap * H200_FLOOR_MS, rel=0.02)
    assert mean(own) == pytest.approx(gap * FLOOR_MS, rel=0.02)
    # what the gap form then computes against the given floor: the scenario's gap, never < 1x
    assert mean(given) / H200_FLOOR_MS == pytest.approx(gap, rel=0.02) and gap > 1.9


def test_the_metrics_inter_token_latency_follows_the_same_floor():
    sc = replace(SCENARIOS[CAUSE], floor_ms=H200_FLOOR_MS).planted()
    metrics = SimulatedSglangMetrics("m", tp=1, seed=1)
    sim = sglang_sim.Steady(seed=1, metrics=metrics, step_s=0.1, scenario=sc)
    for _ in range(300):
        sim.line()
    total = metrics.registry.get_sample_value("sglang:inter_token_latency_seconds_sum",
                                              {"model_name": "m"})
    count = metrics.registry.get_sample_value("sglang:inter_token_latency_seconds_count",
                                              {"model_name": "m"})
    assert count and count > 1000
    assert 1000.0 * total / count == pytest.approx(sc.step_ms(), rel=0.03)
    assert sc.step_ms() == pytest.approx(sc.gap() * H200_FLOOR_MS)


@pytest.mark.parametrize("bad", [["--floor-ms", "0"], ["--floor-ms", "-1"], ["--floor-ms", "nan"]])
def test_a_floor_that_is_no_time_is_refused(tmp_path, capsys, bad):
    with pytest.raises(SystemExit) as exc:
        sglang_sim.main(["--log", str(tmp_path / "x.log"), "--scenario", CAUSE, *bad])
    assert exc.value.code == 2
    assert "--floor-ms: a positive number of ms" in capsys.readouterr().err


def test_a_floor_without_a_scenario_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        sglang_sim.main(["--log", str(tmp_path / "x.log"), "--floor-ms", "4"])
    assert exc.value.code == 2
    assert "--floor-ms needs --scenario" in capsys.readouterr().err
