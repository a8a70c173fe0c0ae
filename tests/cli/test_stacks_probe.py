"""`perftriage probe stacks` for real: py-spy (the test extra) samples a real
Python process with a planted stall in a uniquely named function, on
localhost and over the loopback sshd, and names that function."""

from __future__ import annotations

import json
import re
import shutil
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from tests.support.stall_target import STALL_FUNCTION, running

pytestmark = pytest.mark.skipif(
    shutil.which("py-spy", path=str(Path(sys.executable).parent)) is None
    and shutil.which("py-spy") is None, reason="py-spy (the test extra) is not installed")


@pytest.fixture
def stalled():
    """(pid, tag) of a running stall target; killed after the test."""
    with running() as (proc, tag):
        yield proc.pid, tag


def _config(tmp_path: Path, extra: str = "") -> str:
    path = tmp_path / "config.toml"
    path.write_text(f'[[hosts]]\nname = "localhost"\npython = "{sys.executable}"\n' + extra)
    return str(path)


def _probe(tmp_path: Path, *args: str, extra: str = "", ssh: list[str] = ()):
    r = CliRunner().invoke(cli, ["--config", _config(tmp_path, extra), *ssh, "probe", *args])
    return r.exit_code, r.output


def test_record_names_the_planted_stall_locally(tmp_path, stalled):
    pid, tag = stalled
    code, out = _probe(tmp_path, "--json", "stacks", "--match", tag, "--seconds", "2")
    assert code == 0, out
    doc = json.loads(out)
    assert list(doc)[:3] == ["host", "processes", "top"]
    (proc,) = doc["processes"]
    assert proc["pid"] == pid and tag in proc["name"]
    assert doc["top"]["name"] == STALL_FUNCTION and doc["top"]["self_pct"] > 50
    assert doc["top"]["file"].endswith("stall_target.py")
    assert proc["frames"][0]["name"] == STALL_FUNCTION
    # 200 ticks in 2 s; under load py-spy takes fewer, which reads as idle
    assert proc["samples"] > 20 and 0 <= proc["idle_pct"] < 90
    # the waiter idles: few samples if any (py-spy sees it awake now and then)
    assert proc["threads"][0]["name"] == "MainThread"
    assert all(t["samples"] < proc["threads"][0]["samples"] / 4 for t in proc["threads"][1:])


def test_dump_by_pid_sees_both_threads(tmp_path, stalled):
    pid, _ = stalled
    code, out = _probe(tmp_path, "--json", "stacks", "--pid", str(pid), "--gil")
    assert code == 0, out
    (proc,) = json.loads(out)["processes"]
    assert {t["name"] for t in proc["threads"]} == {"MainThread", "waiter"}
    # one sample per thread: the waiter idles (now and then py-spy catches it awake)
    assert proc["samples"] == 2 and proc["idle_pct"] in (0.0, 50.0, 100.0)
    assert proc["gil_pct"] in (0.0, 50.0)
    names = {f["name"] for f in proc["frames"]}
    assert "idle_waiter_q7x" in names


def test_text_output_and_no_match(tmp_path, stalled):
    _, tag = stalled
    code, out = _probe(tmp_path, "stacks", "--match", tag, "--seconds", "1")
    assert code == 0, out
    assert STALL_FUNCTION in out.splitlines()[0] and "self %" in out
    code, out = _probe(tmp_path, "stacks", "--match", f"nothing-{uuid.uuid4().hex}")
    assert code == 1 and "no-match" in out
    assert re.search(r"\b(1 Python process|([02-9]|\d\d+) Python processes) seen", out), out
    assert tag in out  # the Python processes it saw, ours among them


@pytest.mark.ssh
def test_record_over_the_loopback_sshd(tmp_path, sshd, stalled):
    pid, tag = stalled
    extra = f'\n[[hosts]]\nname = "gpu"\nssh = "{sshd.alias}"\npython = "{sys.executable}"\n'
    code, out = _probe(tmp_path, "--host", "gpu", "--json", "stacks", "--match", tag,
                       "--seconds", "2", extra=extra, ssh=["--ssh-config", str(sshd.ssh_config)])
    assert code == 0, out
    doc = json.loads(out)
    assert doc["host"] == "gpu" and doc["processes"][0]["pid"] == pid
    assert doc["top"]["name"] == STALL_FUNCTION and doc["top"]["self_pct"] > 50


def test_the_demo_simulator_shows_its_real_frames(tmp_path):
    """The demo's simulated server is found like an SGLang scheduler (no
    --match) and its frames are its own: the scheduler pass and its stall."""
    import subprocess

    seed = str(uuid.uuid4().int % 10**9)
    proc = subprocess.Popen([sys.executable, "-m", "perftriage.simulator.sglang_sim", "--rate",
                             "20", "--startup-s", "0", "--seed", seed],
                            stdout=subprocess.DEVNULL)
    try:
        code, out = _probe(tmp_path, "--json", "stacks", "--seconds", "2")
    finally:
        proc.kill()
        proc.wait()
    assert code == 0, out
    doc = json.loads(out)
    (ours,) = [p for p in doc["processes"] if p["pid"] == proc.pid]
    assert "sglang_sim" in ours["name"] and seed in ours["name"]
    names = {f["name"] for f in ours["frames"]}
    assert {"simulated_scheduler_pass", "simulated_host_stall", "main"} <= names
