"""``perftriage kernels FILE.csv``: the real H200 ncu capture, JSON shape, exit 2
on bad input naming what is missing."""

import json
from pathlib import Path

from click.testing import CliRunner

from perftriage.cli import cli

FIXTURE = Path(__file__).parents[1] / "fixtures" / "ncu" / "moe-step-eager.csv"


def run(*args):
    return CliRunner().invoke(cli, ["kernels", *args])


def test_table_names_the_kernel_far_below_its_roofline():
    r = run(str(FIXTURE), "--peak-gbs", "4800")
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.rstrip().endswith("fused_moe_kernel"))
    assert "2394" in line and "49.9" in line and "memory-bound below roofline" in line


def test_json_is_one_object_kernels_by_total_time():
    r = run(str(FIXTURE), "--json", "--gpu", "H200")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert (doc["gpu"], doc["peak_gbs"]) == ("NVIDIA H200", 4800.0)
    moe = next(k for k in doc["kernels"] if k["name"] == "fused_moe_kernel")
    assert moe["verdict"] == "memory-bound" and moe["launches"] == 8
    times = [k["time_us"] for k in doc["kernels"]]
    assert times == sorted(times, reverse=True)


def test_missing_file_exits_2_naming_it(tmp_path):
    r = run(str(tmp_path / "nope.csv"))
    assert r.exit_code == 2 and "nope.csv" in r.output and "Traceback" not in r.output


def test_csv_without_the_metrics_exits_2_naming_them_and_the_command(tmp_path):
    lines = FIXTURE.read_text().splitlines(keepends=True)
    kept = [x for x in lines if "dram__bytes_write.sum" not in x]
    f = tmp_path / "partial.csv"
    f.write_text("".join(kept))
    r = run(str(f))
    assert r.exit_code == 2
    assert "partial.csv" in r.output and "dram__bytes_write.sum" in r.output
    assert "ncu --clock-control none --csv --metrics" in r.output


def test_not_a_csv_exits_2(tmp_path):
    f = tmp_path / "trace.json"
    f.write_text('{"traceEvents": []}\n')
    r = run(str(f))
    assert r.exit_code == 2 and "no ncu CSV header" in r.output


def test_bad_peak_is_a_usage_error():
    assert run(str(FIXTURE), "--peak-gbs", "0").exit_code == 2


def test_a_fifo_or_a_link_to_a_device_is_refused_not_read(tmp_path):
    # a FIFO with no writer would block the read for ever; /dev/zero never ends
    import os

    fifo = tmp_path / "capture.csv"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.csv"
    zero.symlink_to("/dev/zero")
    for path, kind in ((fifo, "FIFO"), (zero, "character device")):
        r = run(str(path))
        assert r.exit_code == 2, r.output
        assert path.name in r.output and kind in r.output and "Traceback" not in r.output


# per layer: dense wq+wo+router, routed experts (tests/fixtures/ncu/README.md); 4 layers
WEIGHTS_GB = str(4 * (100_663_296 + 33_554_432 + 524_288 + 100_663_296) / 1e9)
EXPERT_GB = str(4 * 100_663_296 / 1e9)


def test_roofline_weights_give_the_bytes_a_step_must_read():
    r = run(str(FIXTURE), "--json", "--top", "1", "--weights-gb", WEIGHTS_GB, "--steps", "2",
            "--gpus", "1", "--expert-gb", EXPERT_GB)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    # item 6's shape first, unchanged; step_reads added after
    assert list(doc)[:3] == ["gpu", "peak_gbs", "kernels"] and list(doc)[-1] == "step_reads"
    # computed over every kernel, not only the --top ones shown
    assert len(doc["kernels"]) == 1
    rows = {r["bucket"]: r for r in doc["step_reads"]}
    assert {b: r["read_ratio"] for b, r in rows.items()} == {"weights": 1.0, "moe": 1.0, "gemm": 1.0}
    assert rows["moe"]["kernels"] == ["fused_moe_kernel"]
    assert rows["moe"]["must_read"] == 4 * 100_663_296
    text = run(str(FIXTURE), "--weights-gb", WEIGHTS_GB, "--steps", "1").output
    assert "weights (" in text and "2.0× — it reads its weights twice" in text


def test_step_read_flags_incomplete_exit_2():
    r = run(str(FIXTURE), "--weights-gb", "1")
    assert r.exit_code == 2 and "--steps N" in r.output
    r = run(str(FIXTURE), "--steps", "2", "--gpus", "2")
    assert r.exit_code == 2 and "--gpus, --steps: only with --weights-gb" in r.output
    r = run(str(FIXTURE), "--weights-gb", "1", "--steps", "2", "--expert-gb", "2")
    assert r.exit_code == 2 and "--expert-gb 2 must be less than --weights-gb 1" in r.output
    assert "Traceback" not in r.output


GRAPH_CSV = FIXTURE.with_name("moe-step-graph.csv")


def test_several_files_give_one_table_each_headed_by_the_file():
    r = run(str(FIXTURE), str(GRAPH_CSV), "--gpu", "H200", "--top", "3")
    assert r.exit_code == 0, r.output
    heads = [x for x in r.output.splitlines() if x.startswith("== ")]
    assert heads == [f"== {FIXTURE} ==", f"== {GRAPH_CSV} =="]
    assert "18 kernels, 190 launches" in r.output and "19 kernels, 344 launches" in r.output


def test_several_files_as_json_are_a_list_one_file_stays_one_object():
    one = json.loads(run(str(FIXTURE), "--json").output)
    assert list(one)[:3] == ["gpu", "peak_gbs", "kernels"] and "file" not in one
    r = run(str(FIXTURE), str(GRAPH_CSV), "--json")
    assert r.exit_code == 0, r.output
    docs = json.loads(r.output)
    assert [d["file"] for d in docs] == [str(FIXTURE), str(GRAPH_CSV)]
    assert [d["launches"] for d in docs] == [190, 344]
    assert {k: v for k, v in docs[0].items() if k != "file"} == one


def test_an_unknown_gpu_exits_2_with_the_known_names():
    r = run(str(FIXTURE), "--gpu", "foo")
    assert r.exit_code == 2 and r.stdout == ""
    assert "unknown GPU 'foo'; known: NVIDIA H200, " in r.stderr and "NVIDIA L40S" in r.stderr
    # with the peak given, the name is only a label
    assert run(str(FIXTURE), "--gpu", "foo", "--peak-gbs", "4800").exit_code == 0


def test_bytes_that_match_no_kernel_warn_on_stderr():
    r = run(str(FIXTURE), "--bytes", "nomatch=5", "--bytes", "fused_moe_kernel=100663296")
    assert r.exit_code == 0, r.output
    assert "warning: --bytes 'nomatch=5': no kernel name matches 'nomatch'" in r.stderr
    assert "fused_moe" not in r.stderr and "nomatch" not in r.stdout


def test_the_headline_never_nests_parentheses():
    head = run(str(FIXTURE), "--gpu", "H200").output.splitlines()[0]
    assert head == ("NVIDIA H200, peak 4800 GB/s: 18 kernels, 190 launches; "
                    "peak from table: NVIDIA H200 datasheet (4.8 TB/s HBM3e)")
    depth = deepest = 0
    for ch in head:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        deepest = max(deepest, depth)
    assert deepest == 1


def test_above_the_peak_is_a_warning_and_the_verdict_is_ncus_own():
    """issue 41 item 8: the H200's CSV judged against an RTX PRO 6000's peak
    read 228 % of peak "near roofline"; ncu's own dram% said 85 %."""
    import json

    r = run(str(FIXTURE), "--gpu", "RTX PRO 6000")
    assert r.exit_code == 0, r.output
    assert "warning: 5 kernel(s) above 100 % of the 1792 GB/s peak" in r.output
    assert "the CSV is from another GPU, or --gpu / --peak-gbs is wrong" in r.output
    out = json.loads(run(str(FIXTURE), "--gpu", "RTX PRO 6000", "--json").output)
    assert out["warnings"] and "ncu's own dram__throughput" in out["warnings"][0]
    moe = next(k for k in out["kernels"] if k["name"] == "fused_moe_kernel")
    assert moe["pct_of_peak"] > 100 and moe["verdict"] == "memory-bound"  # by its 49.8 % dram
    assert json.loads(run(str(FIXTURE), "--gpu", "H200", "--json").output)["warnings"] == []


def test_a_csv_joins_an_investigation_as_an_ncu_result(tmp_path):
    """issue 41 item 9: `kernels FILE.csv --session NAME` makes the CSV a result
    of the investigation, joined in the Profile view and read by the triage
    like an ncu probe's."""
    from perftriage.core.compare.load import load
    from perftriage.core.profile.ncu_join import latest_summary
    from perftriage.core.report.markdown import state_from_transcript
    from perftriage.core.store import transcript

    sessions = tmp_path / "s"
    r = CliRunner().invoke(cli, ["--sessions-dir", str(sessions), "kernels", str(FIXTURE),
                                 "--gpu", "H200", "--session", "moe"])
    assert r.exit_code == 0, r.output
    assert "imported" in r.stderr and "into 'moe'" in r.stderr
    [path] = sessions.glob("*.jsonl")
    state = state_from_transcript(transcript.read(path))
    [probe] = state.probes.values()
    assert (probe.kind, probe.status, probe.args[0]) == ("ncu", "ok", "--import")
    probe_id, summary = latest_summary(state.probes.values())
    assert probe_id == probe.probe_id
    assert any(k.name == "fused_moe_kernel" for k in summary.kernels)
    assert load(path).ncu  # the triage's recording holds it
    bad = CliRunner().invoke(cli, ["--sessions-dir", str(sessions), "kernels",
                                   str(tmp_path / "nope.csv"), "--session", "moe"])
    assert bad.exit_code == 2
