"""The SIMULATED traces the demo's server writes for a capture, read by the
real reader (``summarize_files``): what each scenario plants is what the
capture shows — eager launches vs one ``cudaGraphLaunch`` a step, read backs
with their syncs, the MoE backend's kernel, NCCL all-reduces with one rank
late and the others waiting in them."""

from __future__ import annotations

import gzip
import json

import pytest

from perftriage.core.profile.summarize import summarize_files
from perftriage.core.triage.host_side import graph_share
from perftriage.simulator.trace_synth import D2H, MOE_KERNELS, NCCL_AR, TraceSpec, write


def summary(tmp_path, **spec):
    return summarize_files(write(TraceSpec(**spec), tmp_path, "sim"))


def test_cuda_graphs_on_run_back_to_back_from_one_graph_launch(tmp_path):
    s = summary(tmp_path)
    assert s.ranks == 8 and [p.rsplit("/", 1)[1] for p in s.files] == [
        f"sim-TP-{r}.trace.json.gz" for r in range(8)]
    assert graph_share(s) == pytest.approx(1.0) and s.launch is None  # no one-kernel launch call
    assert s.idle_pct is not None and s.idle_pct < 5.0
    assert all(k.launched_by[0].call == "cudaGraphLaunch" for k in s.kernels)


def test_eager_launches_kernels_shorter_than_their_call_and_the_gpu_waits(tmp_path):
    s = summary(tmp_path, graphs=False, host_per_kernel_us=45.0)
    assert graph_share(s) == pytest.approx(0.0)
    assert s.launch is not None and s.launch.short_kernels / s.launch.launches >= 0.5
    assert s.idle_pct is not None and s.idle_pct > 40.0
    assert s.idle_breakdown is not None and s.idle_breakdown.host_wait_pct > 90.0
    assert {k.cpu_op for k in s.kernels} >= {"aten::mm", "sglang::moe_runner"}


def test_a_stall_between_steps_is_host_wait(tmp_path):
    s = summary(tmp_path, step_gap_us=900.0)
    assert s.idle_pct is not None and 40.0 < s.idle_pct < 55.0
    assert s.idle_breakdown is not None and s.idle_breakdown.host_wait_pct > 90.0


def test_a_read_back_per_layer_is_a_d2h_copy_and_a_sync(tmp_path):
    s = summary(tmp_path, graphs=False, host_per_kernel_us=12.0, launch_us=5.0,
                syncs_per_step=4, steps=3)
    copy = next(k for k in s.kernels if k.name == D2H)
    assert copy.calls == 3 * 4 * 8 and copy.cpu_op == "aten::_local_scalar_dense"
    assert copy.launched_by[0].call == "cudaMemcpyAsync"
    b = s.idle_breakdown
    assert b is not None and b.sync_calls == copy.calls and b.after_sync_pct > 80.0
    raw = json.loads(gzip.decompress(open(s.files[0], "rb").read()))
    names = [e["name"] for e in raw["traceEvents"] if e.get("cat") == "cuda_runtime"]
    assert names.count("cudaStreamSynchronize") == 3 * 4


@pytest.mark.parametrize("backend", sorted(MOE_KERNELS))
def test_the_moe_backend_names_the_moe_kernel(tmp_path, backend):
    s = summary(tmp_path, backend=backend, ranks=1)
    name, us = MOE_KERNELS[backend]
    row = next(k for k in s.kernels if k.name.startswith(name[:40]))
    assert row.bucket == "moe" and row.avg_us == pytest.approx(us)


def test_nccl_after_each_layer_is_exposed_communication(tmp_path):
    s = summary(tmp_path, comm="nccl", comm_us=45.0)
    nccl = next(k for k in s.kernels if k.name.startswith(NCCL_AR[:30]))
    assert nccl.bucket == "communication" and nccl.calls == 6 * 4 * 2 * 8
    assert s.exposed_comm_ms is not None and s.window_ms
    assert 20.0 < 100 * s.exposed_comm_ms / s.window_ms < 40.0
    assert nccl.spread_pct < 5.0  # every rank arrives together


def test_a_late_rank_waits_least_in_the_all_reduce(tmp_path):
    s = summary(tmp_path, comm="nccl", comm_us=12.0, late_rank=3, late_us=300.0)
    nccl = next(k for k in s.kernels if k.name.startswith(NCCL_AR[:30]))
    late = nccl.rank_ms[3]
    others = [ms for r, ms in enumerate(nccl.rank_ms) if r != 3]
    assert late < 0.4 * min(others)
    assert s.rank_labels[3] == "TP-3"
