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
