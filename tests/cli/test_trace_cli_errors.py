"""`perftriage trace` on input it must refuse, in words a user acts on:
files of two captures, a CPU-only trace, a file that is not JSON; and what
an nsys summary cannot give (no '-' placeholders)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from perftriage.cli import cli
from tests.support.helpers import FIXTURES

PROF = FIXTURES / "profile"
README = Path(__file__).resolve().parents[2] / "README.md"


def _trace(*args: str):
    return CliRunner().invoke(cli, ["trace", *args])


def test_files_of_two_captures_are_refused_not_mixed() -> None:
    # eager-TP-0, eager-TP-1 and graph-TP-0: TP-0 twice, from an eager and a graph capture
    files = sorted(str(p) for p in [*PROF.glob("eager-*.trace.json.gz"), *PROF.glob("graph-*.trace.json.gz")])
    res = _trace(*files)
    assert res.exit_code == 2, res.output
    assert "rank(s)" not in res.output and "TP-0#2" not in res.output
    err = res.stderr
    assert "2 files claim rank TP-0" in err and "different captures" in err
    assert "trace each capture on its own" in err
    assert str(PROF / "eager-TP-0.trace.json.gz") in err and str(PROF / "graph-TP-0.trace.json.gz") in err
    # each capture on its own is fine
    assert _trace(*[f for f in files if "eager" in f]).exit_code == 0
    assert _trace(str(PROF / "graph-TP-0.trace.json.gz")).exit_code == 0


def test_a_trace_without_gpu_kernels_exits_2_naming_it(tmp_path: Path) -> None:
    cpu = tmp_path / "cpu-only-TP-1.trace.json"
    cpu.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 5, "pid": 1, "tid": 1}]}))
    res = _trace(str(PROF / "graph-TP-0.trace.json.gz"), str(cpu))
    assert res.exit_code == 2, res.output
    assert f"{cpu}: holds no GPU kernels: is it a CPU-only trace?" in res.stderr
    assert "GPU idle" not in res.output and "buckets:" not in res.output


def test_a_file_that_is_not_json_is_said_so_at_offset_0() -> None:
    res = _trace(str(README))
    assert res.exit_code == 2, res.output
    assert f"{README}: not a JSON trace (invalid character at offset 0)" in res.stderr
    assert "byte" not in res.stderr and "truncated" not in res.stderr


def test_nsys_omits_what_it_cannot_give_and_says_why_once() -> None:
    res = _trace(str(PROF / "nsys-cuda_gpu_kern_sum-graph.csv"))
    assert res.exit_code == 0, res.output
    head, why = res.output.splitlines()[:2]
    assert head.startswith("1 rank(s), 19 kernels (nsys): kernel 2.901 ms")
    assert " - " not in head and "window" not in head and "idle" not in head
    assert why.startswith("nsys's kernel summary has no timeline: no capture window, GPU idle")
    assert res.output.count("no timeline") == 1
