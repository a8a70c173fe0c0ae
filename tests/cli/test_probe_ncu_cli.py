"""``perftriage probe ncu --host H [--kernel REGEX] [--launches N] -- COMMAND…``
on localhost with a FAKE ncu first on PATH (tests/support/fake_ncu/ncu, a test
double that writes the real H200 capture)."""

import json
from pathlib import Path

from click.testing import CliRunner

from perftriage.cli import cli

FAKE_NCU_DIR = Path(__file__).parents[1] / "support" / "fake_ncu"


def run(monkeypatch, tmp_path, *args):
    monkeypatch.setenv("PATH", f"{FAKE_NCU_DIR}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_NCU_LOG", str(tmp_path / "argv.jsonl"))
    return CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "probe", *args])


def test_probe_ncu_with_kernel_and_launches(monkeypatch, tmp_path):
    r = run(monkeypatch, tmp_path, "ncu", "--host", "localhost", "--kernel", "fused_moe",
            "--launches", "3", "--json", "--", "python3", "-c", "print('x')")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["verdict"] == "ok" and doc["args"][:5] == ["--kernel", "fused_moe", "--launches",
                                                          "3", "--"]
    kernels = doc["detail"]["ncu"]["kernels"]
    assert [(k["name"], k["launches"]) for k in kernels] == [("fused_moe_kernel", 3)]
    argv = json.loads((tmp_path / "argv.jsonl").read_text().splitlines()[0])["argv"]
    assert argv[-7:] == ["-c", "3", "--graph-profiling", "node", "python3", "-c", "print('x')"]


def test_probe_ncu_text_shows_the_table(monkeypatch, tmp_path):
    r = run(monkeypatch, tmp_path, "ncu", "--host", "localhost", "--", "python3", "-c", "pass")
    assert r.exit_code == 0, r.output
    assert "furthest below roofline: fused_moe_kernel" in r.output
    assert "memory-bound below roofline  fused_moe_kernel" in r.output


def test_kernel_option_belongs_to_ncu(monkeypatch, tmp_path):
    r = run(monkeypatch, tmp_path, "which", "--kernel", "x", "sh")
    assert r.exit_code == 2 and "options of the ncu probe" in r.output


def test_no_command_is_a_usage_error(monkeypatch, tmp_path):
    r = run(monkeypatch, tmp_path, "ncu", "--host", "localhost")
    assert r.exit_code == 2 and "ncu" in r.output


def test_bytes_it_must_read_reaches_the_answer(monkeypatch, tmp_path):
    r = run(monkeypatch, tmp_path, "ncu", "--host", "localhost", "--kernel", "fused_moe",
            "--bytes", "fused_moe_kernel=50331648", "--json", "--", "python3", "-c", "pass")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    moe = doc["detail"]["ncu"]["kernels"][0]
    assert (moe["must_read"], moe["read_ratio"]) == (50331648, 2.0)
    r = run(monkeypatch, tmp_path, "ncu", "--host", "localhost", "--bytes", "fused_moe",
            "--", "python3", "-c", "pass")
    assert r.exit_code == 2 and "KERNEL=BYTES" in r.output


def test_steps_and_experts_reach_the_probe(monkeypatch, tmp_path):
    r = run(monkeypatch, tmp_path, "ncu", "--host", "localhost", "--kernel", "fused_moe",
            "--steps", "2", "--expert-gb", "0.402653184", "--json", "--", "python3", "-c", "pass")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["detail"]["step_read"] == {"steps": 2, "expert_gb": 0.402653184}
    r = run(monkeypatch, tmp_path, "which", "--steps", "2", "sh")
    assert r.exit_code == 2 and "options of the ncu probe" in r.output
