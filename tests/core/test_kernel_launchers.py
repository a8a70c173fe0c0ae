"""Per kernel: one call's duration p50/p99 and the CPU op that launched it
(core/profile/launchers.py), on the real H200 traces against torch's own
key_averages() and the raw JSON, and on small written traces for the cases a
real capture does not show (launch after its kernel in the file, a dropped
launch, several launchers, hostile op names, an nsys summary, an old
recording)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import msgspec
import pytest

from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.core.profile.buckets import Classifier
from perftriage.core.profile.model import KernelRow, LaunchOp, ProfileSummary
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.profile.table import kernel_detail
from perftriage.core.report.profile_section import profile_section
from tests.support.helpers import FIXTURES

PROF = FIXTURES / "profile"
EAGER = [PROF / "eager-TP-0.trace.json.gz", PROF / "eager-TP-1.trace.json.gz"]
GRAPH = PROF / "graph-TP-0.trace.json.gz"
NSYS = PROF / "nsys-cuda_gpu_kern_sum-graph.csv"
# torch's own profiler bookkeeping: device time key_averages() books to no op
PROFILER_OVERHEAD = {"Activity Buffer Request"}


def _detail(s: ProfileSummary, k: KernelRow) -> str:
    return kernel_detail(s, k, Classifier().rule_for(k.name))


@pytest.mark.parametrize("trace", EAGER, ids=lambda p: p.name.split(".")[0])
def test_each_ops_kernels_add_up_to_torchs_self_device_time(trace: Path) -> None:
    # key_averages() books a kernel's device time to the innermost op open
    # around its launch (self device time): the op this summary names
    oracle = {r["name"]: r["self_device_time_total_us"]
              for r in json.loads(trace.with_name(trace.name.replace(".trace.json.gz",
                                                                     ".oracle.json")).read_text())
              if r["device_type"] == "DeviceType.CPU" and r["self_device_time_total_us"] > 0
              and r["name"] not in PROFILER_OVERHEAD}
    by_op: dict[str, float] = {}
    for k in summarize_files([trace]).kernels:
        assert len(k.launched_by) == 1 and k.launched_by[0].calls == k.calls, k.name
        assert k.cpu_op == k.launched_by[0].op and k.cpu_op is not None, k.name
        by_op[k.cpu_op] = by_op.get(k.cpu_op, 0.0) + k.total_ms * 1000
    assert set(by_op) == set(oracle) and len(oracle) >= 10
    for op, us in oracle.items():
        assert by_op[op] == pytest.approx(us, rel=1e-6), op
    # the innermost op, not the one around it
    assert "aten::_fused_rms_norm" in by_op and "aten::rms_norm" not in by_op


def _durations(files: list[Path]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for f in files:
        for e in json.loads(gzip.decompress(f.read_bytes()))["traceEvents"]:
            if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
                out.setdefault(e["name"], []).append(e["dur"])
    return out


def _nearest_rank(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[math.ceil(len(values) * q / 100) - 1]


@pytest.mark.parametrize("files", [EAGER, [GRAPH]], ids=["eager-2-ranks", "graph"])
def test_p50_p99_are_nearest_rank_over_every_call_on_every_rank(files: list[Path]) -> None:
    want = _durations(files)
    s = summarize_files(files)
    assert {k.name for k in s.kernels} == set(want)
    spread = 0
    for k in s.kernels:
        calls = want[k.name]
        assert k.calls == len(calls)
        assert k.p50_us == pytest.approx(_nearest_rank(calls, 50), abs=1e-3), k.name
        assert k.p99_us == pytest.approx(_nearest_rank(calls, 99), abs=1e-3), k.name
        assert min(calls) <= k.p50_us <= k.p99_us <= max(calls)
        spread += k.p99_us > k.p50_us
    assert spread >= len(s.kernels) // 2  # real calls vary: the figures are not the mean twice


def test_graph_replay_kernels_are_launched_by_the_graph_launch_with_no_op() -> None:
    s = summarize_files([GRAPH])
    for k in s.kernels:
        assert k.launched_by == [LaunchOp(op=None, call="cudaGraphLaunch", calls=k.calls)], k.name
        assert k.cpu_op is None
    text = _detail(s, s.kernels[0])
    assert "launched by a CUDA graph replay (cudaGraphLaunch" in text
    assert f"({s.kernels[0].calls} of {s.kernels[0].calls} calls)" in text


def _write(path: Path, events: list[dict]) -> Path:
    path.write_text(json.dumps({"traceEvents": [{"ph": "X", "pid": 1, "tid": 1, **e}
                                                for e in events]}))
    return path


def _kernel(ts: float, dur: float, corr: object, name: str = "gemm_k") -> dict:
    return {"cat": "kernel", "name": name, "pid": 0, "ts": ts, "dur": dur,
            "args": {"stream": 7, "correlation": corr}}


def _launch(ts: float, corr: int, ext: object = None, name: str = "cudaLaunchKernel") -> dict:
    args: dict = {"correlation": corr}
    if ext is not None:
        args["External id"] = ext
    return {"cat": "cuda_runtime", "name": name, "ts": ts, "dur": 1, "args": args}


def _op(ts: float, ext: object, name: str) -> dict:
    return {"cat": "cpu_op", "name": name, "ts": ts, "dur": 5, "args": {"External id": ext}}


def test_launchers_joined_whatever_the_order_counted_and_the_rest_said(tmp_path: Path) -> None:
    events = [
        # kernels first: the launch calls and ops come later in the file
        *[_kernel(100 + 10 * i, 1 + i, i) for i in range(10)],
        *[_launch(90 + 10 * i, i, ext=1000 + i) for i in range(10)],
        *[_op(89 + 10 * i, 1000 + i, "aten::mm" if i < 5 else "aten::addmm" if i < 8 else
              "aten::linear") for i in range(9)],   # the op of call 9 is not in the trace
        _kernel(300, 50, 77),                        # its launch was dropped
        _kernel(310, 60, "not-a-number"),
        _op(400, "1001", "aten::ignored_str_id"),    # an id that is not a number joins nothing
    ]
    s = summarize_files([_write(tmp_path / "t.json", events)])
    (k,) = s.kernels
    assert k.calls == 12 and k.cpu_op == "aten::mm"
    assert k.launched_by == [LaunchOp("aten::mm", "cudaLaunchKernel", 5),
                             LaunchOp("aten::addmm", "cudaLaunchKernel", 3),
                             LaunchOp(None, None, 2)]
    text = _detail(s, k)
    assert "launched by aten::mm via cudaLaunchKernel (5 of 12 calls)" in text
    assert "by aten::addmm via cudaLaunchKernel (3 of 12 calls)" in text
    assert "by a call not in the trace (the profiler dropped it) (2 of 12 calls)" in text
    assert "… 2 calls by other launchers" in text
    # durations 1..10, 50, 60: nearest rank 6th and 12th of 12
    assert (k.p50_us, k.p99_us) == (6.0, 60.0)
    assert "per call p50 6.00 µs, p99 60.00 µs (of 12 calls)" in text
    # the report's kernel table: the biggest launcher and its share
    state = SessionState()
    apply(state, ev.ProfileCaptured(capture_id="prof1", host="h", url="", engine="sglang",
                                    steps=1, summary=s))
    assert "| 6.0 / 60.0 | 100.0 % | `aten::mm` (5 of 12) |" in "\n".join(profile_section(state))


def test_a_launch_outside_any_op_and_a_region_as_the_op(tmp_path: Path) -> None:
    events = [_launch(10, 1), _kernel(20, 3, 1, name="a_k"),
              {"cat": "user_annotation", "name": "my_region", "ts": 30, "dur": 10,
               "args": {"External id": 9}},
              _launch(31, 2, ext=9, name="cuLaunchKernelEx"), _kernel(40, 3, 2, name="b_k")]
    s = summarize_files([_write(tmp_path / "t.json", events)])
    by = {k.name: k for k in s.kernels}
    assert "by cudaLaunchKernel, outside any CPU op the trace records" in _detail(s, by["a_k"])
    assert by["b_k"].cpu_op == "my_region"
    assert "launched by my_region via cuLaunchKernelEx (1 of 1 calls)" in _detail(s, by["b_k"])


def test_hostile_op_names_are_cut_and_never_reach_the_terminal_raw(tmp_path: Path) -> None:
    evil = "aten::\x1b]52;c;cHduZWQ=\x07mm\x1b[2J" + "x" * 5000
    events = [_op(5, 1, evil), _launch(10, 1, ext=1), _kernel(20, 3, 1)]
    s = summarize_files([_write(tmp_path / "t.json", events)])
    (k,) = s.kernels
    assert k.cpu_op is not None and len(k.cpu_op) < 1100 and "chars #" in k.cpu_op
    text = _detail(s, k)
    assert "\x1b" not in text and "\x07" not in text and "aten::" in text


def test_nsys_has_no_per_call_figures_and_says_why() -> None:
    s = summarize_files([NSYS])
    k = s.kernels[0]
    assert k.p50_us is None and k.p99_us is None and k.cpu_op is None and k.launched_by == []
    assert "per call n/a: an nsys kernel summary has no per-call times or launches" in _detail(s, k)


def test_a_capture_recorded_before_the_fields_existed_reads_and_says_so() -> None:
    s = summarize_files([GRAPH])
    old = msgspec.json.encode(s).replace(b'"p50_us"', b'"old_p50"').replace(
        b'"p99_us"', b'"old_p99"').replace(b'"launched_by"', b'"old_lb"')
    back = msgspec.json.decode(old, type=ProfileSummary)
    k = back.kernels[0]
    assert k.p50_us is None and k.launched_by == []
    assert "not in this recording (captured before perftriage kept per-call times)" in _detail(
        back, k)
