"""The ``ncu`` probe kind, run for real through the probe runner on localhost
and over the loopback sshd, with a FAKE ``ncu`` (tests/support/fake_ncu/ncu,
a test double: ncu cannot run here) that writes the REAL H200 capture."""

import json
from pathlib import Path

import pytest

from tests.support.probe_support import (  # noqa: F401 - fixture
    TRANSPORTS,
    alive,
    close_probe_hosts,
    fake_nvidia_smi_dir,
    make_host,
    run_probe,
)

from perftriage.core import probes
from perftriage.core.probe_kinds import ncu_kind

FAKE_NCU_DIR = Path(__file__).parents[1] / "support" / "fake_ncu"
METRICS = ("dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,"
           "dram__throughput.avg.pct_of_peak_sustained_elapsed,"
           "sm__throughput.avg.pct_of_peak_sustained_elapsed")


@pytest.fixture(params=TRANSPORTS)
def transport(request):
    return request.param


def host_with(transport, request, tmp_path, mode="ok", ncu=True):
    path = f"{FAKE_NCU_DIR}:{fake_nvidia_smi_dir(tmp_path)}" if ncu else fake_nvidia_smi_dir(tmp_path)
    log = tmp_path / "ncu-argv.jsonl"
    return make_host(transport, request, preamble=(
        f"export PATH={path}:/usr/bin:/bin FAKE_NCU_MODE={mode} FAKE_NCU_LOG={log} "
        f"TMPDIR={tmp_path}")), log


def starts(log: Path) -> list[dict]:
    return [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []


async def test_ncu_profiles_the_command_with_the_exact_flags(transport, request, tmp_path):
    host, log = host_with(transport, request, tmp_path)
    p = await run_probe(host, "ncu", ["--kernel", "fused|nvjet", "--launches", "24", "--",
                                      "python3", "-c", "print('the program speaks')"])
    assert p.status == "ok", (p.summary, p.stderr)
    argv = starts(log)[0]["argv"]
    assert argv[0] == "--log-file"
    assert argv[2:] == ["--clock-control", "none", "--csv", "--metrics", METRICS,
                        "-k", "regex:fused|nvjet", "-c", "24", "--graph-profiling", "node",
                        "python3", "-c", "print('the program speaks')"]
    # the program's own output stays its own; the CSV never crossed as stdout
    assert p.stdout.strip() == "the program speaks"
    s = p.detail["ncu"]
    assert (s["gpu"], s["peak_gbs"]) == ("NVIDIA H200", 4800.0)  # named by nvidia-smi
    moe = next(k for k in s["kernels"] if k["name"] == "fused_moe_kernel")
    assert moe["pct_of_peak"] == pytest.approx(49.9, abs=0.2) and moe["verdict"] == "memory-bound"
    assert sum(k["launches"] for k in s["kernels"]) == 24  # -c 24 reached ncu
    assert "furthest below roofline: fused_moe_kernel" in p.summary
    assert any("fused_moe_kernel" in x for x in probes.answer_lines(p))
    assert not list(tmp_path.glob("perftriage-ncu.*"))  # its temporary CSV is gone


async def test_command_words_are_data_never_shell(transport, request, tmp_path):
    host, _ = host_with(transport, request, tmp_path)
    marker = tmp_path / "pwned"
    evil = [f"$(touch {marker})", f"; touch {marker}", f"`touch {marker}`"]
    p = await run_probe(host, "ncu", ["python3", "-c", "import sys; print(sys.argv[1:])", *evil])
    assert p.status == "ok", (p.summary, p.stderr)
    assert not marker.exists()
    assert p.stdout.strip() == repr(evil)


async def test_counters_not_permitted_names_the_fix(transport, request, tmp_path):
    host, _ = host_with(transport, request, tmp_path, mode="perm")
    p = await run_probe(host, "ncu", ["python3", "-c", "pass"])
    assert p.status == "failed"
    assert "ERR_NVGPUCTRPERM" in p.summary and "run as root" in p.summary
    assert "NVreg_RestrictProfilingToAdminUsers=0" in p.summary


async def test_missing_ncu_names_the_fix(transport, request, tmp_path):
    host, log = host_with(transport, request, tmp_path, ncu=False)
    p = await run_probe(host, "ncu", ["python3", "-c", "pass"])
    assert p.status == "failed" and p.summary == ncu_kind.MISSING_FIX
    assert "/usr/local/cuda/bin" in p.summary


async def test_no_kernel_matched_is_no_match(transport, request, tmp_path):
    host, _ = host_with(transport, request, tmp_path)
    p = await run_probe(host, "ncu", ["--kernel", "no_such_kernel", "--", "python3", "-c", "pass"])
    assert p.status == "no-match" and "no kernel was profiled" in p.summary


async def test_the_host_holds_the_deadline_and_leaves_nothing_running(request, tmp_path):
    host, log = host_with("local", request, tmp_path, mode="hang")
    p = await run_probe(host, "ncu", ["python3", "-c", "pass"], timeout=ncu_kind.DEADLINE_MARGIN_S + 2)
    assert p.status == "failed" and "deadline" in p.summary, (p.status, p.summary)
    assert not alive(starts(log)[0]["pid"])
    assert not list(tmp_path.glob("perftriage-ncu.*"))


def test_the_kind_declares_itself_heavy_with_a_long_default_limit():
    spec = probes.get("ncu")
    assert spec.heavy and "HEAVY" in spec.form_note and "HEAVY" in spec.help
    assert spec.timeout_s == ncu_kind.DEFAULT_TIMEOUT_S


@pytest.mark.parametrize("args, words", [
    (["--kernel", "x"], "no COMMAND"),
    (["--launches", "0", "--", "python3"], "--launches '0'"),
    (["--launches"], "needs a value"),
    (["--", "-v"], "starts with '-v'"),
])
def test_bad_arguments_say_what(args, words):
    with pytest.raises(probes.ProbeUsageError, match=words.replace("(", r"\(")):
        probes.build_command("ncu", args)


@pytest.mark.parametrize("answer", [
    {"kernels": {"k": "not a list"}, "seen": {}},
    {"kernels": {"k": [1, 2]}, "seen": {m: True for m in ("dram__bytes_read.sum",
                                                          "dram__bytes_write.sum",
                                                          "gpu__time_duration.sum")}},
    {"kernels": [], "seen": "x"},
])
def test_a_hostile_hosts_answer_is_an_error_not_a_crash(answer):
    out = "program output\n" + probes.RESULT_MARK + json.dumps(answer) + "\n"
    v = probes.get("ncu").interpret(["python3", "x.py"], 0, out, "")
    assert v.status in ("error", "failed") and v.summary


async def test_the_peak_comes_from_nvml_on_the_host_when_it_has_it(request, tmp_path):
    """With pynvml on the host (here the FAKE pynvml of tests/support, an H200's
    6016-bit bus at 3201 MHz), the peak is NVML's, not the datasheet's."""
    support = Path(__file__).parents[1] / "support"
    host, _ = host_with("local", request, tmp_path)
    host.transport.preamble += f"\nexport PYTHONPATH={support / 'fake_pynvml_module'}:{support}"
    p = await run_probe(host, "ncu", ["python3", "-c", "pass"])
    assert p.status == "ok", (p.summary, p.stderr)
    s = p.detail["ncu"]
    assert s["peak_gbs"] == 4814.3 and s["peak_source"].startswith("nvml: 2 x 3201 MHz x 6016 bit")


async def test_steps_meet_the_recorded_gaps_weights(request, tmp_path):
    # the probe keeps --steps/--expert-gb; with a recorded gap the Gap view's lines follow
    from perftriage.core.analysis.must_read import must_read_lines
    from perftriage.core.model import events as ev

    host, _ = host_with("local", request, tmp_path)
    p = await run_probe(host, "ncu", ["--steps", "2", "--expert-gb", "0.402653184", "--",
                                      "python3", "-c", "pass"])
    assert p.status == "ok", (p.summary, p.stderr)
    assert p.detail["step_read"] == {"steps": 2, "expert_gb": 0.402653184}
    gap = ev.GapComputed(floor_ms=0.2, ceiling_tps=5000.0, bandwidth_gbs_total=4800.0,
                         inputs={"weights_gb": 0.941621248, "gpus": 1})
    lines = must_read_lines([p], [gap])
    assert lines[2].startswith("  moe (fused_moe_kernel): 1.0× the bytes it must")
