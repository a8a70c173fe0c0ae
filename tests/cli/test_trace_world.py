"""Traces as the world writes them (issue 48), on small hand-made timelines
whose every gap is known; the real public traces are in tests/core/test_corpus.py.

- epoch timestamps (PyTorch before ~2.3) are read, measured from the first kernel;
- the idle split by gap length; a long gap names the CPU op that spans it;
- HIP's single-kernel launches count as launches;
- ranks labelled and ordered by distributedInfo; different jobs, one file
  given twice refused with exit 2 naming the files and why;
- graph capture is warm-up; an MTIA trace is said to be one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.compare.recording import Recording
from perftriage.core.model import events as ev
from perftriage.core.profile.model import TraceError
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.triage.phases import triage
from tests.support.kineto_traces import EPOCH, ev as _ev, rank_trace as _rank, step_trace as _step_trace
from tests.support.kineto_traces import write as _write


def _findings(path: Path):
    rec = Recording()
    rec.feed(ev.ProfileCaptured(capture_id="prof1", host="gpu", summary=summarize_files([path]),
                                t=10.0))
    [phase] = triage(rec, 0, 20)
    return phase.findings


def test_epoch_timestamps_are_read_and_gaps_measured_from_the_first_kernel(tmp_path: Path):
    path = _write(tmp_path / "old.json", _step_trace(EPOCH, 50_000.0))
    res = CliRunner().invoke(cli, ["trace", str(path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert 0 < doc["window_ms"] < 1_000
    by = {g["range"]: g for g in doc["idle_by_gap_length"]}
    assert list(by) == ["<100us", "100us-1ms", "1-10ms", ">10ms"]
    # 3 stalls of 50 ms between the 4 steps (the first has no kernel before it)
    assert by[">10ms"]["gaps"] == 3 and by[">10ms"]["idle_ms"] == pytest.approx(150.015, abs=0.1)
    assert by["<100us"]["gaps"] == 76
    assert sum(g["pct"] for g in by.values()) == pytest.approx(100, abs=0.01)
    gaps = doc["long_gaps"]
    assert all(set(g) >= {"start", "dur_ms", "op"} for g in gaps)
    assert all(0 < g["start"] < doc["window_ms"] and g["dur_ms"] == pytest.approx(50.015, abs=0.01)
               and g["op"] == "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
               for g in gaps)
    # the idle between kernels is the device's, never above the window
    assert doc["idle_breakdown"]["idle_ms"] <= doc["window_ms"]


def test_a_start_no_profiler_writes_is_still_refused(tmp_path: Path):
    path = _write(tmp_path / "bad.json", [_ev("kernel", "k", 1e18, 5, 1, stream=7)])
    res = CliRunner().invoke(cli, ["trace", str(path)])
    assert res.exit_code == 2 and "start time" in res.output and "bad.json" in res.output


def test_long_gaps_are_a_host_stall_naming_the_op_never_launch_bound(tmp_path: Path):
    findings = _findings(_write(tmp_path / "dl.json", _step_trace(0.0, 50_000.0)))
    top = findings[0]
    assert top.cause == "host-stall" and top.confirmed
    assert "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__" in top.title
    assert any("num_workers" in f for f in top.fix)
    assert "launch-bound" not in {f.cause for f in findings}


def test_a_stall_no_op_spans_is_a_lead_asking_for_stacks(tmp_path: Path):
    [top, *_] = _findings(_write(tmp_path / "py.json", _step_trace(0.0, 6_000.0, op=None)))
    assert top.cause == "host-stall" and not top.confirmed
    assert top.next is not None and top.next.kind == "stacks"


def test_short_gaps_stay_launch_bound_with_hip_launches(tmp_path: Path):
    """No stall: only short gaps (launch overhead); hipLaunchKernel is a
    single-kernel launch, so launch-bound fires on ROCm as on CUDA."""
    for launch in ("cudaLaunchKernel", "hipLaunchKernel", "hipExtModuleLaunchKernel",
                   "hipModuleLaunchKernel"):
        path = _write(tmp_path / f"{launch}.json", _step_trace(0.0, 0.0, op=None, kernels=200,
                                                               launch=launch))
        s = summarize_files([path])
        assert s.launch is not None and s.launch.launches == 800, launch
        top = _findings(path)[0]
        assert top.cause == "launch-bound", (launch, top.title)


def test_graph_capture_is_warm_up_not_a_step(tmp_path: Path):
    events = _step_trace(0.0, 0.0, op=None) + [
        _ev("cuda_runtime", "cudaStreamBeginCapture", 5, 1),
        _ev("cuda_runtime", "cudaGraphInstantiateWithFlags", 7, 1)]
    findings = _findings(_write(tmp_path / "cap.json", events))
    assert len(findings) == 1
    top = findings[0]
    assert top.cause == "need-evidence" and "warm-up" in top.title
    assert "graphs were being captured" in top.title
    assert top.next is not None and top.next.kind == "capture"


def test_kernels_without_runtime_events_ask_for_the_cpu_side(tmp_path: Path):
    """A trace with kernels only (activities=[CUDA]) idles 90 %: said, with a
    lead for a capture with CPU activities, never "nothing found"."""
    events = [e for e in _step_trace(0.0, 0.0, op=None) if e["cat"] == "kernel"]
    path = _write(tmp_path / "gpu.json", events)
    s = summarize_files([path])
    assert s.launch_calls == 0 and s.idle_pct is not None and s.idle_pct > 70
    [top] = _findings(path)
    assert top.cause == "need-evidence" and "lacks the CPU side" in top.title
    assert f"{s.idle_pct:.0f} %" in top.title and top.next.kind == "capture"


def test_ranks_are_labelled_and_ordered_by_distributed_info(tmp_path: Path):
    files = [_rank(tmp_path, f"f{i}.json", rank=7 - i, world=8) for i in range(8)]
    res = CliRunner().invoke(cli, ["trace", *map(str, files), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["rank_labels"] == [f"rank{r}" for r in range(8)]
    assert [r["file"] for r in doc["per_rank"]] == [str(f) for f in reversed(files)]
    row = doc["per_rank"][0]
    assert (row["world_size"], row["backend"], row["process_groups"], row["device"]) == (
        8, "nccl", 1, "NVIDIA H100")


@pytest.mark.parametrize("second, why", [
    (dict(rank=1, world=4), "different world sizes"),
    (dict(rank=1, world=2, gpu="AMD Instinct MI300X"), "different GPUs"),
    (dict(rank=0, world=2), "both say they are rank 0"),
    (dict(rank=1, world=2, t0=86_400e6), "never overlaps"),
])
def test_files_of_different_jobs_are_refused(tmp_path: Path, second: dict, why: str):
    a = _rank(tmp_path, "a.json", rank=0, world=2)
    b = _rank(tmp_path, "b.json", **second)
    res = CliRunner().invoke(cli, ["trace", str(a), str(b)])
    assert res.exit_code == 2, res.output
    assert why in res.output and "a.json" in res.output and "b.json" in res.output
    with pytest.raises(TraceError):
        summarize_files([a, b])


def test_one_file_given_twice_is_refused(tmp_path: Path):
    a = _rank(tmp_path, "a.json", rank=0, world=2)
    link = tmp_path / "again.json"
    link.symlink_to(a)
    res = CliRunner().invoke(cli, ["trace", str(a), str(link)])
    assert res.exit_code == 2 and "same file given twice" in res.output


def test_an_mtia_trace_says_what_it_is(tmp_path: Path):
    path = _write(tmp_path / "mtia.json", [
        {"ph": "X", "cat": "mtia_ccp_events", "name": "k", "pid": 1, "ts": 0, "dur": 5},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 2, "ts": 0, "dur": 5}])
    res = CliRunner().invoke(cli, ["trace", str(path)])
    assert res.exit_code == 2 and "an MTIA trace" in res.output and "not supported" in res.output


def test_fixes_fit_the_workload(tmp_path: Path):
    """A training step (autograd backward nodes) gets training fixes, a vLLM
    trace vLLM's flags, other inference SGLang's (issue 48.8)."""
    eager = _step_trace(0.0, 0.0, op=None, kernels=200)
    training = eager + [_ev("cpu_op", "autograd::engine::evaluate_function: MmBackward0", 0, 5)]
    vllm = eager + [_ev("python_function", "vllm/worker/model_runner.py(1500): execute_model",
                        0, 5)]
    fixes = {}
    for name, events in (("training", training), ("vllm", vllm), ("serving", eager)):
        [top, *_] = _findings(_write(tmp_path / f"{name}.json", events))
        assert top.cause == "launch-bound", name
        fixes[name] = " ".join(top.fix)
    assert "torch.compile" in fixes["training"] and "--disable-cuda-graph" not in fixes["training"]
    assert "--enforce-eager" in fixes["vllm"] and "--disable-cuda-graph" not in fixes["vllm"]
    assert "--disable-cuda-graph" in fixes["serving"]


def test_the_report_lists_the_long_gaps_and_hostile_op_names_stay_inert(tmp_path: Path):
    """The report's profile section lists the longest gaps with their ops; an op
    name is the trace writer's text: no escape sequence reaches the terminal
    or the report."""
    from perftriage.core.report.markdown import render
    from perftriage.services.investigation.session import Session

    hostile = "enumerate(DataLoader)\x1b[31m#__next__\x07"
    path = _write(tmp_path / "dl.json", _step_trace(0.0, 50_000.0, op=hostile))
    res = CliRunner().invoke(cli, ["trace", str(path)])
    assert res.exit_code == 0 and "\x1b" not in res.output and "\x07" not in res.output
    assert "spanned by `enumerate(DataLoader)" in res.output
    session = Session(name="t")
    session.emit(ev.ProfileCaptured(capture_id="prof1", host="gpu-a", steps=4,
                                    summary=summarize_files([path])))
    md = render(session.state)
    assert "| rank | at ms | gap ms | host | CPU op spanning it |" in md
    assert md.count("| late |") == 3 and "\x1b" not in md and "\x07" not in md
