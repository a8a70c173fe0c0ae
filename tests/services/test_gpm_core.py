"""GPM counters core: the dmon parser on real H200 captures, the
peak-bandwidth table, and the gap arithmetic and verdicts on the measured
slow/fast phases of decode_standin.py."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from perftriage.core.analysis import counters as cnt
from perftriage.core import gpus
from perftriage.core.analysis import gap
from perftriage.core.model import events as ev
from perftriage.core.model.reducer import replay
from perftriage.core.parse import dmon
from perftriage.services.gap.measurement import judge
from tests.support.helpers import FIXTURES

FIX = FIXTURES / "gpm"
H200_PEAK = 4814.3
WEIGHTS_GB = 40.0  # decode_standin.py 40 ...


def read(name: str) -> str:
    return (FIX / name).read_text()


# --- parser ---------------------------------------------------------------------------


def test_busy_capture_dash_rows_and_repeated_header():
    samples = dmon.parse(read("dmon-gpm.txt"))
    rows = sum(1 for line in read("dmon-gpm.txt").splitlines() if not line.startswith("#"))
    assert len(samples) == rows  # one GPU: one row per sample, headers skipped
    first, second, third = samples[0][0], samples[1][0], samples[2][0]
    assert first.dram_busy_pct is None and second.sm_active_pct is None  # '-' is no value
    assert not first.has_gpm and third.has_gpm
    assert (third.dram_busy_pct, third.sm_active_pct, third.sm_occupancy_pct,
            third.tensor_active_pct, third.util_pct) == (56, 99, 81, 0, 100)
    dram = [s[0].dram_busy_pct for s in samples if s[0].dram_busy_pct is not None]
    assert min(dram) == 55 and max(dram) >= 89  # slow then fast phase


def test_two_gpus_nvlink_columns():
    samples = dmon.parse(read("dmon-nvlink.txt"))
    assert all(len(s) == 2 for s in samples)
    busy = [s for s in samples if s[0].nvlink_tx_mibs is not None]
    g0, g1 = busy[0]
    assert (g0.index, g1.index) == (0, 1)
    assert g0.nvlink_tx_mibs == 292781 and g1.nvlink_rx_mibs == 292792
    assert g0.dram_busy_pct == 24 and g0.sm_occupancy_pct is None  # not asked for: stays None
    # 293,000 MiB/s is ~307 GB/s, what NCCL moved (~300 GB/s) within 2.5 %
    assert cnt.mibs_to_gbs(g0.nvlink_tx_mibs) == pytest.approx(307, rel=0.01)


@pytest.mark.parametrize("name", ["dmon-gpm-csv.txt", "dmon-gpm-time.txt",
                                  "dmon-gpm-csv-nounit-noheader.txt"])
def test_other_formats(name):
    samples = dmon.parse(read(name))
    assert len(samples) == 3
    assert samples[0][0].dram_busy_pct is None and samples[2][0].dram_busy_pct == 0
    assert samples[2][0].sm_active_pct == 0 and samples[2][0].index == 0


def test_every_gpm_column_and_subset():
    all_cols = dmon.parse(read("dmon-gpm-all.txt"))
    last = all_cols[-1][0]
    assert last.dram_busy_pct == 0 and last.nvlink_rx_mibs == 0 and last.tensor_active_pct == 0
    su = dmon.parse(read("dmon-su-gpm10-csv.txt"))
    assert su[-1][0].dram_busy_pct == 0 and su[-1][0].sm_active_pct is None


def test_gddr_memory_temperature_dash_and_garbage_lines():
    header = ("# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk"
              "       dram     smutil      smocc     mmaact")
    rows = ["    0    300     60      -     97     60      0      0      0      0  14001   2430"
            "         71         95         50         12",
            "Failed to read something",
            "    0    300     60      -     97     60      0      0      0      0  14001   2430"
            "          -         95          -          -"]
    stream = dmon.DmonStream()
    out = stream.feed([header, *rows])
    assert len(out) == 1 and out[0][0].dram_busy_pct == 71 and out[0][0].tensor_active_pct == 12
    assert stream.flush()[0].dram_busy_pct is None
    assert stream.errors == ["Failed to read something"]


def test_streaming_feed_split_anywhere_matches_whole_parse():
    lines = read("dmon-nvlink.txt").splitlines()
    stream = dmon.DmonStream()
    got = []
    for i in range(0, len(lines), 3):
        got += stream.feed(lines[i:i + 3])
    got.append(stream.flush())
    assert [[r.dram_busy_pct for r in s] for s in got] == \
        [[r.dram_busy_pct for r in s] for s in dmon.parse("\n".join(lines))]


def test_unavailable_reasons():
    assert "pre-Hopper" in dmon.unavailable_reason(["GPM metrics are not supported on this device"])
    assert "profiler" in dmon.unavailable_reason(["Error: resource in use by another client"])
    assert dmon.unavailable_reason(["    0    300"]) is None
    assert dmon.dmon_command() == "nvidia-smi dmon --gpm-metrics 10,2,3,5 -d 1"


# --- peak bandwidth ---------------------------------------------------------------------


def test_peak_from_nvml_h200():
    p = gpus.peak_bandwidth("NVIDIA H200", 6016, 3201)
    assert p.gbs == H200_PEAK and p.source.startswith("nvml")


@pytest.mark.parametrize(("name", "gbs"), [
    ("NVIDIA H200", 4800), ("NVIDIA H100 80GB HBM3", 3350), ("NVIDIA B200", 8000),
    ("NVIDIA A100-SXM4-80GB", 2039), ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 1792),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 1792)])
def test_peak_from_table_by_nvidia_smi_name(name, gbs):
    p = gpus.peak_bandwidth(name)
    assert p.gbs == gbs and p.source.startswith("table: NVIDIA")


def test_peak_unknown_says_why():
    p = gpus.peak_bandwidth("NVIDIA Q9000")
    assert p.gbs is None and "unknown GPU" in p.source


# --- the gap on the real phases ------------------------------------------------------------


def phase_counters(phase: str) -> tuple[list[ev.GpuCounters], float]:
    """Median GPM DRAM figures and the stand-in's token rate for one phase."""
    samples = [s[0] for s in dmon.parse(read("dmon-gpm.txt")) if s[0].dram_busy_pct is not None]
    truth = [line.split() for line in read("decode-groundtruth.txt").splitlines()]
    tps = [float(t[1].split("=")[1]) for t in truth if t[0] == f"phase={phase}"]
    if phase == "slow":
        dram = statistics.median(s.dram_busy_pct for s in samples if s.dram_busy_pct < 60)
    else:
        dram = statistics.median(s.dram_busy_pct for s in samples if s.dram_busy_pct > 85)
    c = cnt.make_counters(0, name="NVIDIA H200", peak_gbs=H200_PEAK, dram_busy_pct=dram,
                          sm_active_pct=99, util_pct=100)
    return [c], statistics.median(tps[2:])


def judged(r, counters, tps):
    """The top cause the triage gives the gap's window (``perftriage gap``'s diagnosis)."""
    sample = ev.GpuCountersSample(host="h", source="nvidia-smi-dmon", gpus=counters)
    phase = judge("h", r, [sample] * 5, tps, 1)
    return phase.top.cause if phase is not None and phase.top is not None else None


def test_slow_phase_figures_and_the_triage_says_wasted_traffic():
    counters, tps = phase_counters("slow")
    r = gap.compute(bytes_gb=WEIGHTS_GB, counters=counters, peak_gbs=H200_PEAK,
                    tokens_per_s=tps, batch=1, source="nvidia-smi-dmon")
    assert r.floor_ms == pytest.approx(8.309, abs=0.01)
    assert r.measured_ms == pytest.approx(73.7, rel=0.01)
    assert r.useful_bw_gbs == pytest.approx(543, rel=0.01)
    assert r.dram_bw_gbs == pytest.approx(0.56 * H200_PEAK, rel=0.01)
    assert r.traffic_ratio == pytest.approx(5.0, abs=0.1)
    assert r.idle_pct == pytest.approx(44, abs=1)
    assert "verdict" not in r.public() and r.counter_quality == "ok" and r.note == ""
    assert judged(r, counters, tps) == "wasted-traffic"  # the gap measures, the triage judges


def test_fast_phase_is_near_floor_by_the_triage_and_bandwidth_matches_counted_bytes():
    counters, tps = phase_counters("fast")
    r = gap.compute(bytes_gb=WEIGHTS_GB, counters=counters, peak_gbs=H200_PEAK,
                    tokens_per_s=tps, batch=1, source="nvidia-smi-dmon")
    assert judged(r, counters, tps) == "near-floor"
    assert r.dram_bw_gbs == pytest.approx(r.useful_bw_gbs, rel=0.03)  # counted bytes within 3 %
    assert r.gap < 1.15


def test_communication_bound_from_nvlink_capture():
    capacity = gap.parse_nvlink_status(read("nvlink-status.txt"))
    assert capacity == {0: pytest.approx(478.1, abs=0.1), 1: pytest.approx(478.1, abs=0.1)}
    sample = [s for s in dmon.parse(read("dmon-nvlink.txt")) if s[0].nvlink_tx_mibs][0]
    counters = [cnt.make_counters(r.index, peak_gbs=H200_PEAK, dram_busy_pct=r.dram_busy_pct,
                                  nvlink_rx_gbs=cnt.mibs_to_gbs(r.nvlink_rx_mibs),
                                  nvlink_tx_gbs=cnt.mibs_to_gbs(r.nvlink_tx_mibs))
                for r in sample]
    r = gap.compute(bytes_gb=None, counters=counters, peak_gbs=H200_PEAK,
                    nvlink_capacity_gbs=capacity[0], source="nvidia-smi-dmon")
    assert r.nvlink_pct == pytest.approx(64, abs=1)
    assert r.idle_pct == pytest.approx(76, abs=1) and r.note == ""  # figures, no verdict
    assert r.floor_ms is None and r.measured_ms is None and r.gap is None


def test_idle_memory_and_links_and_the_gpu_that_deviates():
    counters = [cnt.make_counters(i, peak_gbs=1000, dram_busy_pct=p) for i, p in
                enumerate([50, 55, 20, 52])]
    r = gap.compute(bytes_gb=1.0, counters=counters, peak_gbs=1000, tokens_per_s=1600)
    assert (r.slowest_gpu, r.outlier_side) == (2, "low")
    assert r.idle_pct == pytest.approx(56, abs=1)
    assert r.note == "GPU 2 deviates: DRAM 20 % busy, 31 points below the median 51 % of 4 GPUs"


def test_batch_aware_measured_ms_and_useful_bandwidth():
    c = [cnt.make_counters(0, peak_gbs=1000, dram_busy_pct=80)]
    r = gap.compute(bytes_gb=2.0, counters=c, peak_gbs=1000, tokens_per_s=800, batch=8)
    assert r.measured_ms == 10.0 and r.ms_label == "ms/tok/req@bs8"  # 1000 x 8 / 800
    assert r.useful_bw_gbs == 200.0  # 100 steps/s x 2 GB
    r1 = gap.compute(bytes_gb=2.0, counters=c, peak_gbs=1000, tokens_per_s=100, batch=1)
    assert r1.measured_ms == 10.0 and r1.ms_label == "ms/tok@bs1"


def test_unavailable_is_null_with_reason_never_zero():
    r = gap.compute(bytes_gb=40, counters=[], peak_gbs=H200_PEAK, tokens_per_s=100,
                    error="GPM not supported on this GPU")
    assert r.dram_bw_gbs is None and r.dram_busy_pct is None and r.idle_pct is None
    assert r.traffic_ratio is None
    assert r.counter_quality == "none"
    assert r.note == "no bandwidth counters (GPM not supported on this GPU)"


def test_stuck_counters_flagged():
    det = cnt.StuckDetector(after=3)
    flags = [det.check(cnt.make_counters(0, peak_gbs=1000, dram_busy_pct=0, sm_active_pct=0,
                                         util_pct=100)).stuck for _ in range(4)]
    assert flags == [False, False, True, True]
    assert not det.check(cnt.make_counters(0, peak_gbs=1000, dram_busy_pct=0, util_pct=0)).stuck
    c = det.check(cnt.make_counters(1, dram_busy_pct=0, sm_active_pct=0, util_pct=99))
    c.stuck = True
    r = gap.compute(bytes_gb=1, counters=[c], peak_gbs=1000, tokens_per_s=10)
    assert r.counter_quality == "stuck" and "not trusted" in r.note


def test_events_round_trip_and_reducer():
    c = cnt.make_counters(0, name="NVIDIA H200", peak_gbs=H200_PEAK, dram_busy_pct=90)
    sample = ev.GpuCountersSample(host="h", source="nvml-gpm", gpus=[c], t=1.0)
    r = gap.compute(bytes_gb=40, counters=[c], peak_gbs=H200_PEAK, tokens_per_s=108)
    gs = ev.GapSample(host="h", t=1.0, **r.event_fields())
    back = [ev.decode(ev.encode(e)) for e in (sample, gs)]
    assert back == [sample, gs]
    state = replay(back)
    assert state.host("h").counters.gpus[0].dram_bw_gbs == pytest.approx(4332.9, abs=0.1)
    assert list(state.host("h").dram_history[0]) == [pytest.approx(4332.9, abs=0.1)]
    assert (state.gap_samples[-1].counter_quality, state.gap_samples[-1].note) == ("ok", "")
    assert state.gap_samples[-1].verdict == ""  # the gap judges no more


def test_counters_below_useful_bytes_are_called_inconsistent():
    c = [cnt.make_counters(0, peak_gbs=H200_PEAK, dram_busy_pct=0)]
    r = gap.compute(bytes_gb=40, counters=c, peak_gbs=H200_PEAK, tokens_per_s=108)
    assert r.counter_quality == "inconsistent" and "token rate is stale" in r.note
