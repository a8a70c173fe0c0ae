"""nvidia-smi parsers on every real H200 capture in tests/fixtures/nvidia-smi."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from perftriage.core.parse import dmon, nvsmi
from perftriage.core.model.events import GpuSample
from tests.support.helpers import FIXTURES

FX = FIXTURES / "nvidia-smi"
H200 = FX / "h200"
X2 = FX / "h200x2"

UUID0 = "GPU-123e22a3-2673-11b7-d255-7482f2465817"
X2_UUIDS = ["GPU-d21c07d8-1c0b-5940-efd4-2bc6aea3db1f", "GPU-2c754617-40b3-2310-87a4-1385e9a28a86"]
# The fields the captures were made with (see the command line in pynvml.txt)
CAPTURE_FIELDS = (
    "index,name,uuid,pci.bus_id,driver_version,utilization.gpu,utilization.memory,"
    "memory.used,memory.total,power.draw,power.limit,temperature.gpu,clocks.sm,clocks.mem,"
    "clocks.max.sm,pstate"
).split(",")


def test_every_fixture_has_a_test():
    # (the table view and -q / -q -x captures went with their parsers, which
    # no caller used; they are still in /work/shared/fixtures/nvidia-smi)
    tested = {
        "h200/pynvml.txt", "h200/query-gpu-busy.csv", "h200/query-gpu-idle.csv",
        "h200x2/x2-nvidia-smi-topo.txt", "h200x2/x2-query-lms500.csv",
    }
    present = {str(p.relative_to(FX)) for p in FX.rglob("*") if p.is_file()}
    assert present == tested


def test_capture_fields_match_the_recorded_command():
    cmd = next(l for l in (H200 / "pynvml.txt").read_text().splitlines() if "--query-gpu=" in l)
    fields = re.search(r"--query-gpu=(\S+)", cmd).group(1).split(",")
    assert fields == CAPTURE_FIELDS


def test_query_csv_idle_with_units_and_header():
    gpus = nvsmi.parse_query_csv((H200 / "query-gpu-idle.csv").read_text(), CAPTURE_FIELDS)
    # the capture holds the same sample twice: with units, then nounits
    assert len(gpus) == 2
    with_units, no_units = gpus
    for g in gpus:
        assert g.index == 0 and g.name == "NVIDIA H200" and g.uuid == UUID0
        assert g.util_pct == 0.0 and g.mem_used_mib == 0.0 and g.mem_total_mib == 143771.0
        assert g.power_limit_w == 700.0 and g.temp_c == 39.0
        assert g.sm_clock_mhz == 1980.0 and g.mem_clock_mhz == 3201.0
        assert g.sm_clock_max_mhz == 1980.0 and g.pstate == "P0"
    assert with_units.power_w == 128.05 and no_units.power_w == 128.06


def test_query_csv_nounits_line_with_explicit_fields():
    line = (H200 / "query-gpu-idle.csv").read_text().splitlines()[-1]
    [g] = nvsmi.parse_query_csv(line, CAPTURE_FIELDS)
    assert g.uuid == UUID0 and g.power_w == 128.06 and g.mem_total_mib == 143771.0


def test_query_csv_busy_sections():
    text = (H200 / "query-gpu-busy.csv").read_text()
    [g] = nvsmi.parse_query_csv(text, CAPTURE_FIELDS)  # the header and other sections: no rows
    assert g.util_pct == 100.0 and g.mem_util_pct == 25.0
    assert g.mem_used_mib == 31731.0 and g.power_w == 223.56 and g.temp_c == 55.0
    assert g.sm_clock_mhz == 1500.0
    procs = nvsmi.parse_compute_apps(
        "430, python3, 31722 MiB", ("pid", "process_name", "used_gpu_memory")
    )
    assert procs[0][1].pid == 430 and procs[0][1].used_mib == 31722.0
    samples = dmon.parse(text)  # the dmon lines after the CSV sections
    assert [[(r.index, r.power_w) for r in s] for s in samples] == [
        [(0, 260.0)], [(0, 692.0)], [(0, 693.0)]]
    assert all(s[0].util_pct == 100.0 and not s[0].has_gpm for s in samples)


def test_lms_stream_groups_two_gpus_per_sample():
    lines = (X2 / "x2-query-lms500.csv").read_text().splitlines()
    stream = nvsmi.QueryStream(CAPTURE_FIELDS)
    batches = []
    # feed in awkward chunks: the grouping must not depend on read boundaries
    for i in range(0, len(lines), 3):
        batches += stream.feed(lines[i : i + 3])
    assert stream.gpu_count == 2
    assert len(batches) == len(lines) // 2
    for b in batches:
        assert [g.index for g in b] == [0, 1]
        assert [g.uuid for g in b] == X2_UUIDS
    assert batches[0][0].power_w == 113.29 and batches[0][1].sm_clock_mhz == 405.0
    assert batches[-1][1].power_w == 80.73
    assert stream.flush() is None


def test_stream_survives_na_and_garbage():
    fields = nvsmi.QUERY_FIELDS
    na = ", ".join(["0", "NVIDIA H200", "GPU-x"] + ["[N/A]"] * (len(fields) - 3))
    stream = nvsmi.QueryStream(fields)
    out = stream.feed([na, "", "Unable to determine the device handle: Unknown Error", na])
    assert len(out) == 2  # one GPU: the repeat of index 0 closes each sample
    g = out[0][0]
    assert g.util_pct is None and g.power_w is None and g.pstate is None
    assert stream.last_error.startswith("Unable to determine")


def test_query_line_with_comma_in_name():
    fields = ("index", "name", "uuid", "utilization.gpu")
    [g] = nvsmi.parse_query_csv("3, NVIDIA Foo, Bar, GPU-1, 57", fields)
    assert g.index == 3 and g.name == "NVIDIA Foo, Bar" and g.uuid == "GPU-1" and g.util_pct == 57


@pytest.mark.parametrize("value", ["[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "", " "])
def test_na_values_are_none(value):
    assert nvsmi.to_float(value) is None


def test_query_command_quotes_nothing_unsafe():
    cmd = nvsmi.query_command(period_ms=500)
    assert cmd.startswith("nvidia-smi --query-gpu=index,name,uuid,")
    assert cmd.endswith("--format=csv,noheader,nounits -lms 500")


def test_x2_topo():
    text = (X2 / "x2-nvidia-smi-topo.txt").read_text()
    assert "\x1b[" in text  # the capture really carries ANSI codes
    topo = nvsmi.parse_topo(text)
    assert topo.columns == ["GPU0", "GPU1", "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    assert topo.gpus == ["GPU0", "GPU1"]
    assert topo.link("GPU0", "GPU1") == "NV18" and topo.link("GPU1", "GPU1") == "X"
    assert all(len(cells) == len(topo.columns) for _, cells in topo.rows)
    assert topo.rows[0][1][2:] == ["0-31", "0", "N/A"]
    assert any(l.startswith("NV# =") for l in topo.legend)
    assert not any("\x1b" in c for c in topo.columns)
    assert nvsmi.Topology(**{k: v for k, v in topo.__dict__.items()}).to_dict()["rows"][0][0] == "GPU0"
    assert nvsmi.parse_topo("no matrix here") is None


def test_pynvml_capture_converts_units():
    line = next(l for l in (H200 / "pynvml.txt").read_text().splitlines() if l.startswith("{"))
    d = json.loads(line)
    g = nvsmi.gpu_from_nvml(
        d["index"], name=d["name"], uuid=d["uuid"], util_gpu=d["util_gpu"],
        util_mem=d["util_mem"], mem_used_bytes=d["mem_used"], mem_total_bytes=d["mem_total"],
        power_mw=d["power_mw"], power_limit_mw=d["power_limit_mw"], temp_c=d["temp"],
        sm_clock=d["sm_clock"], mem_clock=d["mem_clock"], mem_clock_max=3201,
        bus_width_bits=6016, pstate=0,
        processes=[(pid, "python3", used) for pid, used in d["procs"]],
    )
    assert isinstance(g, GpuSample)
    assert g.power_w == pytest.approx(690.62) and g.power_limit_w == 700.0
    assert g.mem_total_mib == pytest.approx(143771.0, abs=1)  # what nvidia-smi shows
    assert g.mem_used_mib == pytest.approx(32346, abs=1)
    assert g.processes[0].used_mib == pytest.approx(31722, abs=1)  # nvidia-smi: 31722 MiB
    assert g.pstate == "P0" and g.util_pct == 100.0
    assert g.bandwidth_gbs == pytest.approx(4814.4, abs=0.1)


def test_bandwidth_h200():
    assert nvsmi.bandwidth_gbs(6016, 3201) == pytest.approx(4814.4, abs=0.1)
    assert nvsmi.bandwidth_gbs(None, 3201) is None
    assert nvsmi.bandwidth_gbs(6016, None) is None


def test_throttle_bits():
    assert nvsmi.throttle_names(0x1 | 0x4) == ["gpu_idle", "sw_power_cap"]
    assert nvsmi.throttle_names(0) == []
