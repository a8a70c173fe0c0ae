"""Nsight Compute CSV -> per-kernel roofline summary, on the real H200 capture
(tests/fixtures/ncu/moe-step-eager.csv, from ../shared/fixtures/h200-ncu/)."""

import io
import subprocess
import sys
from pathlib import Path

import pytest

from perftriage.core.profile import ncu, ncu_csv
from perftriage.core.profile.ncu_table import render

FIXTURE = Path(__file__).parents[1] / "fixtures" / "ncu" / "moe-step-eager.csv"
HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
          '"Metric Value"\n')


def row(launch, name, metric, unit, value):
    return (f'"{launch}","1","python3","127.0.0.1","{name}","1","7","(256, 1, 1)","(8, 1, 1)",'
            f'"0","9.0","Command line profiler metrics","{metric}","{unit}","{value}"\n')


def launch(i, name, read="1,000,000", write="0", t="1,000", tu="ns", dram="50", sm="10",
           bu="byte"):
    return "".join([row(i, name, ncu_csv.BYTES_READ, bu, read),
                    row(i, name, ncu_csv.BYTES_WRITE, bu, write),
                    row(i, name, ncu_csv.DURATION, tu, t),
                    row(i, name, ncu_csv.DRAM_PCT, "%", dram),
                    row(i, name, ncu_csv.SM_PCT, "%", sm)])


def fold_text(text):
    return ncu_csv.fold(io.StringIO(text, newline=""))


def by_name(summary, part):
    return next(k for k in summary.kernels if part in k.name)


def test_real_h200_capture_fused_moe_is_far_below_its_roofline():
    s = ncu.summarize_file(str(FIXTURE), gpu="H200")
    assert (s.gpu, s.peak_gbs, s.launches, len(s.kernels)) == ("NVIDIA H200", 4800.0, 190, 18)
    moe = by_name(s, "fused_moe_kernel")
    # 8 launches (4 layers x 2 steps), ~100.7 MB read per launch in ~43 us
    assert moe.launches == 8
    assert moe.bytes_read / 8 == pytest.approx(100.74e6, rel=0.01)
    assert moe.gbs == pytest.approx(2394, abs=5)
    assert moe.pct_of_peak == pytest.approx(49.9, abs=0.2)
    assert moe.dram_pct == pytest.approx(49.8, abs=0.2)  # ncu's own figure agrees
    assert moe.verdict == ncu.MEMORY
    sdpa = by_name(s, "sdpa")
    assert sdpa.gbs == pytest.approx(4123, abs=5) and sdpa.verdict == ncu.NEAR
    gemv = by_name(s, "nvjet_sm90_tst_128x8")
    assert gemv.gbs == pytest.approx(3664, abs=5) and gemv.verdict == ncu.MEMORY
    # random weight init: SMs busy, DRAM low -> not memory-bound (compute)
    assert by_name(s, "distribution_elementwise").verdict == ncu.COMPUTE
    # top-k: a tiny kernel, both low -> not memory-bound (latency)
    assert by_name(s, "gatherTopK").verdict == ncu.LATENCY
    # kernels by total time; shares add up
    times = [k.time_us for k in s.kernels]
    assert times == sorted(times, reverse=True)
    assert sum(k.time_pct for k in s.kernels) == pytest.approx(100, abs=0.1)


def test_json_shape_is_the_issue_shape_in_order():
    import msgspec

    s = ncu.summarize_file(str(FIXTURE), peak_gbs=4800)
    doc = msgspec.json.decode(msgspec.json.encode(s))
    assert list(doc)[:3] == ["gpu", "peak_gbs", "kernels"]
    assert list(doc["kernels"][0])[:9] == ["name", "launches", "time_us", "bytes", "gbs",
                                           "pct_of_peak", "dram_pct", "sm_pct", "verdict"]
    assert doc["gpu"] is None and doc["peak_gbs"] == 4800.0


def test_without_a_peak_the_verdict_reads_ncus_dram_share():
    s = ncu.summarize_file(str(FIXTURE))
    moe = by_name(s, "fused_moe_kernel")
    assert s.peak_gbs is None and moe.pct_of_peak is None
    assert moe.verdict == ncu.MEMORY and "--peak-gbs" in s.peak_source


def test_bytes_it_must_read_once_and_twice():
    must = ncu.parse_must_read(["fused_moe_kernel=100_663_296", "nvjet_sm90_tst_128x8=50331648"])
    s = ncu.summarize_file(str(FIXTURE), gpu="H200", must_read=must)
    assert by_name(s, "fused_moe_kernel").read_ratio == 1.0
    # the wq GEMV reads ~100 MB: against a 50 MB need it reads its weights twice
    assert by_name(s, "nvjet_sm90_tst_128x8").read_ratio == 2.0
    text = render(s)
    assert "fused_moe_kernel: 1.0× the bytes it must" in text
    assert "2.0× — it reads its weights twice" in text


@pytest.mark.parametrize("spec", ["fused_moe", "=5", "x=0", "x=abc", "(=5"])
def test_bad_bytes_spec_names_itself(spec):
    with pytest.raises(ncu.NcuInputError, match="--bytes"):
        ncu.parse_must_read([spec])


def test_scaled_units_are_the_same_as_base_units():
    base = launch(0, "k", read="2,000,000", t="4,000")
    scaled = launch(0, "k", read="2", bu="Mbyte", t="4", tu="us")
    old = launch(0, "k", read="2,000", bu="Kbyte", t="0.004", tu="msecond")
    sums = [ncu.summarize(fold_text(HEADER + t), peak_gbs=1000) for t in (base, scaled, old)]
    assert {(s.kernels[0].bytes, s.kernels[0].gbs) for s in sums} == {(2_000_000, 500.0)}


def test_na_values_are_counted_and_left_out_never_guessed():
    text = HEADER + launch(0, "k") + launch(1, "k", t="n/a") + launch(2, "j", read="n/a")
    s = ncu.summarize(fold_text(text), peak_gbs=1)
    k, j = by_name(s, "k"), by_name(s, "j")
    assert (k.launches, k.na_launches, k.time_us, k.bytes) == (2, 1, 1.0, 1_000_000)
    assert (j.launches, j.na_launches, j.gbs, j.verdict) == (1, 1, None, ncu.UNKNOWN)
    assert s.na == {ncu_csv.DURATION: 1, ncu_csv.BYTES_READ: 1}
    assert "n/a values" in render(s)


def test_preamble_and_program_output_before_the_header_are_skipped():
    text = "==PROF== Connected\nhello from the program, \"ID\" nope\n" + HEADER + launch(0, "k")
    assert ncu.summarize(fold_text(text)).launches == 1


@pytest.mark.parametrize("text, words", [
    ("", ["no ncu CSV header"]),
    ("==ERROR== ERR_NVGPUCTRPERM - no permission\n", ["no ncu CSV header", "ERR_NVGPUCTRPERM"]),
    ('"ID","Kernel Name","Value"\n', ["lacks column(s)", "Metric Name", "Metric Unit"]),
    (HEADER + launch(0, "k")[:-40] + "\n", ["line 6", "field(s)"]),
    (HEADER + row(0, "k", ncu_csv.DURATION, "furlong", "3"), ["line 2", "unit 'furlong'"]),
    (HEADER + row(0, "k", ncu_csv.DURATION, "ns", "fast"), ["line 2", "not a number"]),
])
def test_bad_csv_says_what_and_where(text, words):
    with pytest.raises(ncu_csv.NcuCsvError) as err:
        fold_text(text)
    for w in words:
        assert w in str(err.value)


def test_missing_metrics_named_with_the_ncu_command_that_gives_them():
    text = HEADER + row(0, "k", ncu_csv.DURATION, "ns", "100")
    with pytest.raises(ncu.NcuInputError) as err:
        ncu.summarize(fold_text(text))
    msg = str(err.value)
    assert "dram__bytes_read.sum, dram__bytes_write.sum" in msg
    assert "ncu --clock-control none --csv --metrics dram__bytes_read.sum," in msg


def test_gpu_name_from_the_csv_when_collected():
    text = HEADER + row(0, "k", ncu_csv.GPU_NAME, "", "NVIDIA H200") + launch(0, "k")
    s = ncu.summarize(fold_text(text))
    assert (s.gpu, s.peak_gbs) == ("NVIDIA H200", 4800.0)


def test_hostile_kernel_name_is_shown_not_obeyed():
    s = ncu.summarize(fold_text(HEADER + launch(0, "evil\x1b]2;pwned\x07k")), peak_gbs=1)
    assert "\x1b" not in render(s) and "\x07" not in render(s)


def test_the_folding_file_runs_alone_on_a_host_with_only_python():
    """The ncu probe ships ncu_csv.py's source to the host: it must need
    nothing but the standard library."""
    src = Path(ncu_csv.__file__).read_text()
    r = subprocess.run([sys.executable, "-I", "-c", src, "--fold-json", str(FIXTURE), "@@M@@"],
                       capture_output=True, text=True, cwd="/")
    assert r.returncode == 0, r.stderr
    import json

    doc = json.loads(r.stdout.splitlines()[-1][len("@@M@@"):])
    assert ncu.summarize(doc, gpu="H200") == ncu.summarize_file(str(FIXTURE), gpu="H200")


def test_a_big_csv_is_streamed_not_held():
    """Memory is bounded by the kernel names, not the file: folding 60,000
    rows from a generator peaks far below what holding them would take."""
    import tracemalloc

    def lines():
        yield HEADER
        for i in range(12_000):
            yield from launch(i, f"kernel_{i % 7}", read="123,456,789").splitlines(keepends=True)

    held = sum(len(x) for x in lines())
    tracemalloc.start()
    folded = ncu_csv.fold(lines())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(folded["kernels"]) == 7
    assert peak < held / 10, (peak, held)


GRAPH = FIXTURE.with_name("moe-step-graph.csv")
PROBE = FIXTURE.with_name("probe-ncu-moe-step.json")


def test_real_graph_capture_names_its_gpu_and_profiles_graph_nodes():
    """ncu --graph-profiling node on a CUDA-graph replay (real H200 run): the
    graph's kernels come one by one; the GPU's name is in the CSV itself."""
    s = ncu.summarize_file(str(GRAPH))
    assert (s.gpu, s.peak_gbs, s.launches) == ("NVIDIA H200", 4800.0, 344)
    moe = by_name(s, "fused_moe_kernel")
    assert moe.launches == 16  # 1 eager + 1 warm-up + 2 replays, 4 layers each
    assert moe.pct_of_peak == pytest.approx(50.2, abs=0.3) and moe.verdict == ncu.MEMORY
    assert ncu.furthest_below(s, 1)[0].name == "fused_moe_kernel"


def test_the_real_probe_record_decodes_to_the_summary_shape():
    import json

    import msgspec

    doc = json.loads(PROBE.read_text())
    s = msgspec.convert(doc["detail"]["ncu"], ncu.NcuSummary)
    assert doc["verdict"] == "ok" and s.gpu == "NVIDIA H200" and s.launches == 190
    moe = by_name(s, "fused_moe_kernel")
    assert moe.gbs == pytest.approx(2394, rel=0.02)
