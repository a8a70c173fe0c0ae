"""`perftriage trace`: kernel summaries of real H200 torch.profiler traces,
checked against torch's own key_averages(), plus the bucket table, the
timeline figures (idle, exposed communication) and bad files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.profile.buckets import Classifier
from perftriage.core.profile.model import TraceError
from perftriage.core.profile.summarize import summarize_files
from tests.support.helpers import FIXTURES

PROF = FIXTURES / "profile"
EAGER = [PROF / "eager-TP-0.trace.json.gz", PROF / "eager-TP-1.trace.json.gz"]
GRAPH = PROF / "graph-TP-0.trace.json.gz"
NSYS = PROF / "nsys-cuda_gpu_kern_sum-graph.csv"
KEYS = ["files", "ranks", "window_ms", "kernel_ms", "idle_pct", "exposed_comm_ms", "buckets",
        "kernels"]


def oracle(trace: Path) -> dict[str, tuple[int, float]]:
    """torch's key_averages() of the same run: device events -> (count, µs)."""
    rows = json.loads(trace.with_name(trace.name.replace(".trace.json.gz", ".oracle.json"))
                      .read_text())
    return {r["name"]: (r["count"], r["device_time_total_us"]) for r in rows
            if r["device_type"] == "DeviceType.CUDA"}


@pytest.mark.parametrize("trace", [*EAGER, GRAPH], ids=lambda p: p.name.split(".")[0])
def test_kernel_totals_match_torch_within_half_a_percent(trace: Path) -> None:
    want = oracle(trace)
    got = {k.name: k for k in summarize_files([trace]).kernels}
    assert set(got) == set(want)
    assert len(want) >= 15
    for name, (count, us) in want.items():
        assert got[name].calls == count, name
        assert got[name].total_ms * 1000 == pytest.approx(us, rel=0.005), name


def test_graph_replay_kernels_have_no_cpu_parent_but_are_attributed_by_name() -> None:
    raw = json.loads(gzip.decompress(GRAPH.read_bytes()))
    kernels = [e for e in raw["traceEvents"] if e.get("cat") == "kernel"]
    assert kernels and not any("External id" in e["args"] for e in kernels)
    s = summarize_files([GRAPH])
    by = {k.name: k.bucket for k in s.kernels}
    assert by["nvjet_sm90_tst_256x8_64x6_2x1_v_bz_NNT"] == "gemm"
    assert any(b == "attention" and "sdpa" in n for n, b in by.items())
    assert by["memcpy32_post"] == "memcpy/memset"


def test_cuda_graphs_remove_the_launch_gaps() -> None:
    # the same loop: eager leaves the GPU idle most of the window, the graph hardly
    eager, graph = summarize_files(EAGER[:1]), summarize_files([GRAPH])
    assert eager.idle_pct is not None and graph.idle_pct is not None
    assert eager.idle_pct > 60 > 10 > graph.idle_pct
    assert graph.kernel_ms == pytest.approx(eager.kernel_ms, rel=0.05)
    assert graph.window_ms is not None and graph.window_ms >= graph.kernel_ms * (1 - 0.01)


def test_json_shape_and_sums() -> None:
    res = CliRunner().invoke(cli, ["trace", *map(str, EAGER), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert list(doc)[: len(KEYS)] == KEYS
    assert doc["files"] == [str(p) for p in EAGER] and doc["ranks"] == 2
    assert list(doc["kernels"][0])[:6] == ["name", "bucket", "total_ms", "calls", "avg_us", "pct"]
    assert [b["bucket"] for b in doc["buckets"]][0] == "other"  # indexSelect: the gathered experts
    totals = [k["total_ms"] for k in doc["kernels"]]
    assert totals == sorted(totals, reverse=True)
    assert sum(totals) == pytest.approx(doc["kernel_ms"], rel=1e-3)
    assert sum(k["pct"] for k in doc["kernels"]) == pytest.approx(100, abs=0.05)
    assert sum(b["pct"] for b in doc["buckets"]) == pytest.approx(100, abs=0.05)
    # times are summed over the two ranks
    one = summarize_files(EAGER[:1])
    assert doc["kernel_ms"] == pytest.approx(2 * one.kernel_ms, rel=0.01)
    top = doc["kernels"][0]
    assert top["avg_us"] == pytest.approx(top["total_ms"] * 1000 / top["calls"], rel=1e-3)
    assert len(top["rank_ms"]) == 2 and 0 <= top["spread_pct"] < 5
    assert 0 < top["p50_us"] <= top["p99_us"] and top["cpu_op"] == "aten::index_select"
    assert top["launched_by"] == [{"op": "aten::index_select", "call": "cudaLaunchKernel",
                                   "calls": top["calls"]}]
    res = CliRunner().invoke(cli, ["trace", str(GRAPH), "--json", "--top", "3"])
    assert len(json.loads(res.output)["kernels"]) == 3


def test_table_output_names_the_big_kernels() -> None:
    res = CliRunner().invoke(cli, ["trace", str(GRAPH), "--top", "5"])
    assert res.exit_code == 0, res.output
    assert "GPU idle" in res.output and "nvjet_sm90_tst_256x8_64x6_2x1_v_bz_NNT" in res.output
    assert "indexSelectSmallIndex<…" in res.output and "14 more" in res.output


def test_nsys_csv_agrees_with_the_trace_it_came_from() -> None:
    nsys, kineto = summarize_files([NSYS]), summarize_files([GRAPH])
    assert nsys.source == "nsys" and nsys.window_ms is None and nsys.idle_pct is None
    want = {k.name: k for k in kineto.kernels}
    assert {k.name for k in nsys.kernels} == set(want)
    for k in nsys.kernels:
        assert k.calls == want[k.name].calls
        assert k.total_ms == pytest.approx(want[k.name].total_ms, abs=0.002)
        assert k.bucket == want[k.name].bucket
    res = CliRunner().invoke(cli, ["trace", str(NSYS), "--json"])
    assert res.exit_code == 0 and json.loads(res.output)["idle_pct"] is None


@pytest.mark.parametrize("name,bucket", [
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
     "communication"),
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(...)", "communication"),
    ("void deep_ep::internode_ll::dispatch<...>", "communication"),
    ("fused_moe_kernel", "moe"),
    ("void cutlass::device_kernel<flashinfer::cutedsl_moe_grouped_gemm<...>>", "moe"),
    ("void vllm::moe::topk_softmax<8, 128>", "moe"),
    ("cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35", "attention"),
    ("void flashinfer::BatchDecodeWithPagedKVCacheKernel<...>", "attention"),
    ("_fwd_kernel_mla_decode", "attention"),
    ("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_NNT", "gemm"),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "gemm"),
    ("Memcpy DtoD (Device -> Device)", "memcpy/memset"),
    ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<...>",
     "elementwise/norm"),
    ("void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>", "other"),
])
def test_builtin_buckets(name: str, bucket: str) -> None:
    assert Classifier().bucket(name) == bucket


def test_user_rules_come_first_and_are_cached() -> None:
    c = Classifier([("moe", r"indexSelect"), ("sampling", r"gatherTopK")])
    assert c.bucket("void at::native::indexSelectSmallIndex<x>") == "moe"
    assert c.bucket("at::native::sbtopk::gatherTopK<x>") == "sampling"
    assert c.bucket("nvjet_sm90_x") == "gemm"


def test_config_rules_reach_the_command(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('[[profile.rules]]\nbucket = "moe"\npattern = "indexSelect|bmm"\n')
    res = CliRunner().invoke(cli, ["--config", str(cfg), "trace", str(GRAPH), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["buckets"][0]["bucket"] == "moe"
    cfg.write_text('[[profile.rules]]\nbucket = "moe"\npattern = "(unclosed"\n')
    res = CliRunner().invoke(cli, ["--config", str(cfg), "trace", str(GRAPH)])
    assert res.exit_code == 2 and f"{cfg}:3: profile.rules[0] (moe): not a regex" in res.output


def _trace(events: list[dict]) -> dict:
    return {"traceEvents": [{"ph": "X", "cat": "kernel", "pid": e.get("pid", 0), "tid": 7,
                             "name": e["name"], "ts": e["ts"], "dur": e["dur"], "args": {}}
                            for e in events] + [{"ph": "M", "name": "process_name", "pid": 0,
                                                 "args": {"name": "x"}}]}


def test_idle_and_exposed_communication_on_a_known_timeline(tmp_path: Path) -> None:
    # device 0: gemm 0-10, nccl 5-20 (5 µs hidden under the gemm, 10 exposed),
    # gemm on another stream 12-14 (hides 2 more), idle 20-30, attention 30-40
    ev = [dict(name="nvjet_a", ts=1000, dur=10), dict(name="ncclDevKernel_AllReduce", ts=1005, dur=15),
          dict(name="nvjet_b", ts=1012, dur=2), dict(name="flash_fwd", ts=1030, dur=10),
          # device 1 of the same rank: one kernel, no idle
          dict(name="nvjet_a", ts=5000, dur=4, pid=1)]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_trace(ev)))
    s = summarize_files([path])
    assert s.window_ms == pytest.approx((40 + 4) / 1000)
    assert s.idle_pct == pytest.approx(100 * 10 / 44, abs=0.01)
    assert s.exposed_comm_ms == pytest.approx(8 / 1000)
    assert s.kernel_ms == pytest.approx(41 / 1000)
    assert s.bucket_pct("communication") == pytest.approx(100 * 15 / 41, abs=0.01)


def test_spread_over_ranks(tmp_path: Path) -> None:
    a, b = tmp_path / "1-TP-0.trace.json", tmp_path / "1-TP-1.trace.json"
    a.write_text(json.dumps(_trace([dict(name="k", ts=0, dur=30)])))
    b.write_text(json.dumps(_trace([dict(name="k", ts=0, dur=10)])))
    s = summarize_files([a, b])
    assert s.rank_labels == ["TP-0", "TP-1"]
    assert s.kernels[0].rank_ms == [0.03, 0.01] and s.kernels[0].spread_pct == 100.0


@pytest.mark.parametrize("make,reason", [
    (lambda p: p.write_bytes(GRAPH.read_bytes()[:2000]), "truncated"),
    (lambda p: p.write_bytes(gzip.decompress(GRAPH.read_bytes())[:5000]), "truncated"),
    (lambda p: p.write_text('{"hello": 1}'), "traceEvents"),
    (lambda p: p.write_text(""), "empty"),
    (lambda p: p.write_text("Name,Total Time (ns)\nnot,a,row\n"), ""),
])
def test_bad_files_exit_2_naming_the_file(tmp_path: Path, make, reason: str) -> None:
    bad = tmp_path / "bad-TP-1.trace.json.gz"
    make(bad)
    res = CliRunner().invoke(cli, ["trace", str(GRAPH), str(bad)])
    assert res.exit_code == 2, res.output
    assert str(bad) in res.output and reason in res.output
    with pytest.raises(TraceError):
        summarize_files([bad])


def test_missing_file_exits_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["trace", str(tmp_path / "nope.json")])
    assert res.exit_code == 2 and "nope.json" in res.output


def test_hostile_kernel_names_never_reach_the_terminal_raw(tmp_path: Path) -> None:
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(_trace([dict(name="k\x1b]2;pwned\x07\x1b[31m", ts=0, dur=5)])))
    res = CliRunner().invoke(cli, ["trace", str(path)])
    assert res.exit_code == 0 and "\x1b" not in res.output and "\x07" not in res.output
    assert "pwned" in res.output  # shown, defused


def test_a_bare_event_array_is_a_trace_too(tmp_path: Path) -> None:
    # the Chrome trace format also allows a top-level array of events
    path = tmp_path / "bare.json"
    path.write_text(json.dumps(_trace([dict(name="nvjet_x", ts=0, dur=7)])["traceEvents"]))
    s = summarize_files([path])
    assert s.kernels[0].name == "nvjet_x" and s.kernel_ms == pytest.approx(0.007)


def test_the_headline_is_per_rank_and_per_step() -> None:
    """Two ~19 ms ranks read as 'a window of 38.267 ms': the summed figures
    are given per rank, and per step when --steps says how many."""
    r = CliRunner().invoke(cli, ["trace", *map(str, EAGER), "--steps", "10"])
    assert r.exit_code == 0, r.output
    head = r.output.splitlines()[0]
    assert "kernel 2.895 ms in a window of 19.134 ms per rank (mean of 2)" in head
    assert "per step 0.289 ms of kernels in 1.913 ms" in head
    assert "38.267" not in head


def test_trace_with_session_brings_the_files_into_the_investigation(tmp_path: Path) -> None:
    from perftriage.core.model import events as ev
    from perftriage.core.store import investigations as inv
    from perftriage.core.store import transcript

    for args in (["--session", "moe gap"], ["-s", "moe gap"]):  # the command's, the global
        r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "trace", *map(str, EAGER),
                                     "--top", "1", *args])
        assert r.exit_code == 0, r.output
    caps = [e for e in transcript.read(inv.path_for("moe gap", tmp_path)).events
            if isinstance(e, ev.ProfileCaptured)]
    assert [c.capture_id for c in caps] == ["prof1", "prof2"]
    assert caps[0].summary.ranks == 2 and all(Path(f).is_file() for f in caps[0].files)


def test_two_instantiations_of_one_template_never_read_alike():
    """issue 41 item 12: two rows cut to the same text. The name is cut in
    the middle, keeping the function and the template's end; names that
    still collide show where they differ."""
    from perftriage.core.profile.summarize import summarize_files
    from perftriage.core.profile.table import short_name, short_names

    s = summarize_files([EAGER[0]])
    for width in (40, 60, 100):
        names = short_names([k.name for k in s.kernels], width)
        assert len(set(names)) == len(names) == len(s.kernels)
        assert all(len(n) <= width for n in names)
    assert short_name("void f<int>(int, float)", 60) == "f<int>(int, float)"  # fits: whole
    assert short_name("void ns::kern<" + "a" * 80 + ", 7>(int, int)", 30) == \
        "ns::kern<…" + ("a" * 80 + ", 7>")[-20:]
