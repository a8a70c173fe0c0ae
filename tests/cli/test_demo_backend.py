"""The demo's before/after without a GPU: its SIMULATED server restarted with
another MoE backend (``S`` → ``sglang-sim backend=flashinfer_cutedsl``) decodes
~3.3x faster, and a comparison of before and after says so, with the
argument that changed."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.cli.commands.demo import DEMO_SERVER, demo_config
from perftriage.core.compare.compare import Side, compare
from perftriage.core.compare.recording import Recording
from perftriage.core.compare.slices import Window
from perftriage.core.model import events as ev
from perftriage.core.store import investigations
from perftriage.services.logs.server_launcher import render
from perftriage.simulator.sglang_sim import BACKEND_SPEEDUP, DEFAULT_BACKEND, Steady

RATE = 8  # the demo's log lines per second


def command_for(backend: str, tmp_path: Path) -> str:
    profile = demo_config(tmp_path / "sim.log", RATE, metrics_port=1).servers[0]
    assert profile.name == DEMO_SERVER
    return render(profile.command, {**profile.args, "backend": backend})


def run_of(rec: Recording, backend: str, t0: float, seconds: int, tmp_path: Path,
           seed: int = 7) -> None:
    rec.feed(ev.ServerEvent(server=DEMO_SERVER, host="localhost", state="starting",
                            command=command_for(backend, tmp_path), t=t0))
    sim = Steady(seed=seed, error_every=0, speedup=BACKEND_SPEEDUP[backend])
    for s in range(seconds):
        rec.feed(ev.LogLines(source_id="log1", lines=[sim.line() for _ in range(RATE)],
                             t=t0 + 1 + s))


def test_a_restart_with_the_cutedsl_backend_reads_as_faster(tmp_path: Path):
    assert DEFAULT_BACKEND == "flashinfer_cutlass"
    rec = Recording()
    rec.feed(ev.LogSourceOpened(source_id="log1", host="localhost", path="sim.log"))
    run_of(rec, DEFAULT_BACKEND, 0.0, 60, tmp_path)
    run_of(rec, "flashinfer_cutedsl", 61.0, 60, tmp_path)
    out = compare(Side(rec, Window("before", 1, 60)), Side(rec, Window("after", 62, 121)))
    tps = next(r for r in out["metrics"] if r["metric"] == "decode_tps")
    assert tps["verdict"] == "improved" and tps["ratio"] == pytest.approx(3.3, rel=0.1)
    assert out["summary"].startswith("B is 3.")
    assert [c["text"] for c in out["changes"]["args"]] == [
        "--moe-runner-backend flashinfer_cutlass → flashinfer_cutedsl"]


@pytest.mark.parametrize("backend", ["flashinfer_cutlass", "flashinfer_cutedsl"])
def test_the_simulator_process_writes_its_backend_and_speed(backend: str):
    out = subprocess.run(
        [sys.executable, "-m", "perftriage.simulator.sglang_sim", "--rate", "0", "--lines", "400",
         "--startup-s", "0", "--seed", "3", "--error-every", "0",
         "--moe-runner-backend", backend],
        capture_output=True, text=True, timeout=60, check=True).stdout.splitlines()
    assert f"'moe_runner_backend': '{backend}'" in out[0]
    gens = [float(line.split("gen throughput (token/s): ")[1].split(",")[0])
            for line in out if "Decode batch" in line]
    per_request = statistics.median(g / int(line.split("#running-req: ")[1].split(",")[0])
                                    for g, line in zip(gens, [ln for ln in out
                                                              if "Decode batch" in ln]))
    assert per_request == pytest.approx(6.3 * BACKEND_SPEEDUP[backend], rel=0.05)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_thirty_seconds_each_side_read_improved_without_phase_warnings(tmp_path: Path, seed):
    """The simulated load is steady (a constant arrival rate, small noise): 30 s
    before and 30 s after the restart read ``improved``, comparably, whatever
    the seed (a sine-wave load flipped between improved and no change and
    made ``compare`` warn of phase changes)."""
    rec = Recording()
    rec.feed(ev.LogSourceOpened(source_id="log1", host="localhost", path="sim.log"))
    run_of(rec, DEFAULT_BACKEND, 0.0, 30, tmp_path, seed=seed)
    run_of(rec, "flashinfer_cutedsl", 31.0, 30, tmp_path, seed=seed + 100)
    rec.flush()
    out = compare(Side(rec, Window("before", 1, 31)), Side(rec, Window("after", 32, 62)))
    tps = next(r for r in out["metrics"] if r["metric"] == "decode_tps")
    assert tps["verdict"] == "improved"
    assert out["comparable"] is True
    assert not [w for w in out["warnings"] if "phase" in w or "load" in w], out["warnings"]


def test_the_load_is_steady():
    sim = Steady(seed=9, error_every=0)
    running = [int(line.split("#running-req: ")[1].split(",")[0])
               for line in (sim.line() for _ in range(2000)) if "Decode batch" in line]
    assert max(running) - min(running) <= 16
    assert statistics.pstdev(running) < 3


def test_the_help_s_compare_example_reads_a_restart(tmp_path: Path):
    """``demo --help`` tells how to compare before and after an ``S`` restart;
    its example, run on an investigation of one run with a restart at 1:01, reads
    ``improved`` (``NAME#1 NAME#2`` cannot: a restart is no new run)."""
    help_text = " ".join(CliRunner().invoke(cli, ["demo", "--help"]).output.split())
    assert "-s NAME" in help_text and "#1" not in help_text
    a, b = re.search(r"perftriage compare (NAME@\S+) (NAME@[^\s`]+)", help_text).groups()

    rec_events: list[ev.Event] = [
        ev.SegmentStarted(segment=1, started_at="2026-12-02T08:00:00+00:00", t=0.0),
        ev.LogSourceOpened(source_id="log1", host="localhost", path="sglang-sim.log", t=0.0)]
    for backend, t0 in ((DEFAULT_BACKEND, 0.0), ("flashinfer_cutedsl", 61.0)):
        rec_events.append(ev.ServerEvent(server=DEMO_SERVER, host="localhost", state="starting",
                                         command=command_for(backend, tmp_path), t=t0))
        sim = Steady(seed=int(t0), error_every=0, speedup=BACKEND_SPEEDUP[backend])
        rec_events += [ev.LogLines(source_id="log1", lines=[sim.line() for _ in range(RATE)],
                                   t=t0 + 1 + s) for s in range(60)]
    path = investigations.path_for("restart", tmp_path)
    with open(path, "wb") as fh:
        fh.write(json.dumps(investigations.header_for(
            "restart", "2026-12-02T08:00:00+00:00", ["localhost"])).encode() + b"\n")
        fh.writelines(ev.encode(e) + b"\n" for e in rec_events)

    def compare_cli(*slices: str):
        return CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "compare", *slices,
                                        "--json"])

    r = compare_cli(a.replace("NAME", "restart"), b.replace("NAME", "restart"))
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert next(m for m in out["metrics"] if m["metric"] == "decode_tps")["verdict"] == "improved"
    assert out["warnings"] == [] and out["changes"]["args"]
    assert compare_cli("restart#1", "restart#2").exit_code == 2
