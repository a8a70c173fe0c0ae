import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.analysis import roofline


def run(*args):
    return CliRunner().invoke(cli, ["roofline", *args])


def test_issue_example_json_is_exactly_the_public_object():
    r = run("--weights-gb", "46.08", "--gpus", "8", "--bandwidth-gbs", "1800",
            "--measured-ms", "97", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert list(d) == ["floor_ms", "ceiling_tps", "measured_ms", "gap", "efficiency_pct",
                       "bandwidth_gbs_total"]
    assert d["floor_ms"] == pytest.approx(3.2)
    assert d["ceiling_tps"] == pytest.approx(312.5)
    assert d["measured_ms"] == 97.0
    assert round(d["gap"], 1) == 30.3
    assert round(d["efficiency_pct"], 1) == 3.3
    assert d["bandwidth_gbs_total"] == 14400.0
    assert all(isinstance(v, float) for v in d.values())


def test_without_measured_the_gap_fields_are_null():
    r = run("--weights-gb", "46.08", "--gpus", "8", "--bandwidth-gbs", "1800", "--json")
    d = json.loads(r.output)
    assert d["measured_ms"] is None and d["gap"] is None and d["efficiency_pct"] is None


def test_human_output_says_the_gap():
    r = run("--weights-gb", "46.08", "--gpus", "8", "--bandwidth-gbs", "1800", "--measured-ms", "97")
    assert r.exit_code == 0
    assert "30.3x" in r.output and "3.3%" in r.output and "3.200 ms/token" in r.output


def test_moe_active_params_form():
    # 37B active parameters at FP8 = 37 GB per step; 8 x H200
    res = roofline.compute(active_params_b=37, bits=8, gpus=8, gpu="H200")
    assert res.bytes_gb == 37.0
    assert res.bandwidth_gbs_total == 38400.0
    assert res.floor_ms == pytest.approx(37 / 38400 * 1000, abs=1e-4)
    # 4-bit halves the bytes
    assert roofline.compute(active_params_b=37, bits=4, gpus=8, gpu="H200").floor_ms == \
        pytest.approx(18.5 / 38400 * 1000, abs=1e-4)


def test_kv_term_adds_bytes():
    base = roofline.compute(weights_gb=46.08, gpus=8, bandwidth_gbs=1800)
    with_kv = roofline.compute(weights_gb=46.08, kv_gb=2.88, gpus=8, bandwidth_gbs=1800)
    assert with_kv.bytes_gb == pytest.approx(48.96)
    assert with_kv.floor_ms == pytest.approx(3.4)
    assert with_kv.floor_ms > base.floor_ms


@pytest.mark.parametrize("name", ["H200", "h200", "NVIDIA H200", "nvidia-h200", "H100 SXM",
                                  "h100", "A100 80GB", "a100-80gb", "b200",
                                  "RTX PRO 6000 Blackwell Workstation", "rtx-pro-6000",
                                  # exactly as nvidia-smi prints them
                                  "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA B200",
                                  "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                                  "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"])
def test_gpu_aliases(name):
    canonical, gbs = roofline.lookup_gpu(name)
    assert roofline.KNOWN_GPUS[canonical] == gbs


@pytest.mark.parametrize(("name", "gbs"), [
    ("NVIDIA H200", 4800), ("NVIDIA H100 80GB HBM3", 3350), ("NVIDIA A100-SXM4-80GB", 2039),
    ("NVIDIA B200", 8000), ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 1792),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 1792)])
def test_known_gpu_table(name, gbs):
    assert roofline.KNOWN_GPUS[name] == gbs


def test_roofline_cli_accepts_nvidia_smi_names():
    from click.testing import CliRunner

    from perftriage.cli import cli

    res = CliRunner().invoke(cli, ["roofline", "--weights-gb", "40", "--json",
                                   "--gpu", "NVIDIA RTX PRO 6000 Blackwell Server Edition"])
    assert res.exit_code == 0, res.output
    assert '"bandwidth_gbs_total": 1792.0' in res.output
    bad = CliRunner().invoke(cli, ["roofline", "--weights-gb", "40", "--gpu", "NVIDIA Q9000"])
    assert bad.exit_code == 2 and "unknown GPU" in bad.output


def test_bandwidth_from_nvml_h200():
    # H200: 6144-bit bus, 3201 MHz max memory clock, double data rate
    assert roofline.bandwidth_from_nvml(6144, 3201) == pytest.approx(4917, rel=1e-3)
    assert roofline.bandwidth_from_nvml(None, 3201) is None


@pytest.mark.parametrize(
    "args, message",
    [
        (["--weights-gb", "46", "--gpus", "0", "--gpu", "H200"], "--gpus"),
        (["--weights-gb", "-1", "--gpu", "H200"], "--weights-gb"),
        (["--weights-gb", "0", "--gpu", "H200"], "--weights-gb"),
        (["--weights-gb", "46", "--kv-gb", "-2", "--gpu", "H200"], "--kv-gb"),
        (["--weights-gb", "46", "--gpu", "Z9000"], "unknown GPU"),
        (["--weights-gb", "46", "--bandwidth-gbs", "-5"], "--bandwidth-gbs"),
        (["--weights-gb", "46"], "--bandwidth-gbs or --gpu"),
        (["--gpu", "H200"], "--weights-gb"),
        (["--active-params-b", "37", "--gpu", "H200"], "--bits"),
        (["--weights-gb", "46", "--gpu", "H200", "--measured-ms", "0"], "--measured-ms"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(args, message):
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert "Traceback" not in r.output


def test_panel_prefill_from_hosts_and_log():
    from perftriage.core.model import events as ev
    from perftriage.core.model.reducer import replay
    from perftriage.ui.screens.roofline import parse, prefill

    line = ("[2026-11-28 09:16:06 TP0] Decode batch, #running-req: 1, #token: 852, "
            "token usage: 0.00, cuda graph: True, gen throughput (token/s): 10.00, #queue-req: 0")
    gpus = [ev.GpuSample(index=i, name="NVIDIA H200", bus_width_bits=6144,
                         mem_clock_max_mhz=3201) for i in range(8)]
    state = replay([ev.HostSample(host="g", gpus=gpus),
                    ev.LogSourceOpened(source_id="l1", host="g", path="/x"),
                    ev.LogLines(source_id="l1", lines=[line])])
    filled = prefill(state)
    values = filled.values
    assert values["gpus"] == "8" and values["bandwidth_gbs"] == "4917"
    assert values["measured_ms"] == "100.0"
    assert filled.notes["measured_ms"] == "from the log @bs1"
    # NVML names map to the table when no bandwidth is known
    gpus = [ev.GpuSample(index=0, name="NVIDIA H200")]
    assert prefill(replay([ev.HostSample(host="g", gpus=gpus)])).values["gpu"] == "NVIDIA H200"
    # a filled-in form computes
    kwargs = parse({"weights_gb": "46.08", "gpus": "8", "bandwidth_gbs": "1800",
                    "measured_ms": "97"})
    assert roofline.compute(**kwargs).floor_ms == 3.2
    with pytest.raises(roofline.RooflineError, match="GPUs: not a whole number"):
        parse({"gpus": "eight"})


def test_panel_prefill_from_a_server_profile_when_no_host_has_gpus():
    """The demo: no GPU on any host, the simulated server's profile says tp
    and card; the form computes with only the weights typed."""
    from perftriage.cli.commands.demo import demo_config
    from perftriage.core.model.reducer import replay
    from perftriage.ui.screens.roofline import parse, prefill

    servers = demo_config(Path("/tmp/x.log"), 8.0, metrics_port=1).servers
    filled = prefill(replay([]), servers)
    # the default demo's profile also says its model's bytes a step (40 B active at FP4)
    assert filled.values == {"gpus": "8", "gpu": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                             "active_params_b": "40", "bits": "4"}
    assert filled.notes["gpus"] == "server sglang-sim: tp 8"
    typed = {k: v for k, v in filled.values.items() if k not in ("active_params_b", "bits")}
    r = roofline.compute(**parse({**typed, "weights_gb": "46.08", "measured_ms": "97"}))
    assert round(r.floor_ms, 2) == 3.21 and round(r.gap or 0) == 30


def test_form_errors_name_the_form_fields_never_cli_flags():
    from perftriage.ui.screens.roofline import LABELS, parse

    with pytest.raises(roofline.RooflineError) as got:
        roofline.compute(**parse({"weights_gb": "46.08"}))
    assert got.value.worded(LABELS) == "give 'GB/s per GPU' or 'GPU name'"
    assert str(got.value) == "give --bandwidth-gbs or --gpu NAME"  # the CLI keeps its flags
    with pytest.raises(roofline.RooflineError) as got:
        roofline.compute(**parse({"weights_gb": "1", "gpu": "Q{9000}"}))
    assert "--" not in got.value.worded(LABELS) and "Q{9000}" in got.value.worded(LABELS)
