"""Regenerate sessions/example-moe-gap.jsonl: a small, deterministic
investigation used by the docs, the snapshot tests and the report golden file.

    python scripts/make_example_session.py
"""

from __future__ import annotations

from pathlib import Path

from perftriage.core.model import events as ev
from perftriage.core.store import transcript

OUT = Path(__file__).resolve().parent.parent / "sessions" / "example-moe-gap.jsonl"
T0_WALL = 1796000000.0  # fixed: the file must not change between runs


def gpu(i: int, util: float, power: float, mem: float) -> ev.GpuSample:
    return ev.GpuSample(
        index=i, name="NVIDIA H200", uuid=f"GPU-example-{i}", util_pct=util, mem_util_pct=util / 2,
        mem_used_mib=mem, mem_total_mib=143771, power_w=power, power_limit_w=700.0,
        temp_c=40 + i, sm_clock_mhz=1980, mem_clock_mhz=3201, pstate="P0",
    )


def events() -> list[ev.Event]:
    out: list[ev.Event] = [
        ev.HostStatus(host="localhost", state="up"),
        ev.HostStatus(host="gpu-a", state="up"),
    ]
    for k in range(12):
        out.append(ev.HostSample(host="localhost", cpu_pct=5.0 + k % 3, mem_used_bytes=3 << 30,
                                 mem_total_bytes=24 << 30, load1=0.2, gpus=[],
                                 gpu_error="no NVIDIA GPU (NVML: NVML Shared Library Not Found)"))
        out.append(ev.HostSample(host="gpu-a", cpu_pct=12.0 + k, mem_used_bytes=180 << 30,
                                 mem_total_bytes=2000 << 30, load1=8.5,
                                 gpus=[gpu(0, 100.0, 180.0 + 10 * (k % 4), 131000),
                                       gpu(1, 100.0, 175.0 + 8 * (k % 5), 131000)]))
    out += [
        ev.HypothesisAdded(hyp_id="h1", title="MoE runs on the slow flashinfer_cutlass path",
                           note="try flashinfer_cutedsl backend", status="testing"),
        ev.HypothesisAdded(hyp_id="h2", title="installed flashinfer lacks cutedsl kernels"),
        ev.HypothesisAdded(hyp_id="h3", title="GPUs starved: 100% util but low power",
                           status="supported"),
        ev.ProbeQueued(probe_id="p1", host="gpu-a", kind="grep", args=["cutedsl", "sglang"],
                       command="python3 -c ... cutedsl sglang"),
        ev.ProbeStarted(probe_id="p1"),
        ev.ProbeOutput(probe_id="p1", data="layers/moe/flashinfer_cutedsl_moe.py:12: def flashinfer_cutedsl_moe_masked(\n"),
        ev.ProbeFinished(probe_id="p1", status="ok", exit_status=0, duration_s=0.412,
                         summary="14 matches in 3 files", detail={"matches": 14}),
        ev.ProbeQueued(probe_id="p2", host="gpu-a", kind="import",
                       args=["flashinfer.jit.cutedsl"], command="python3 -c ..."),
        ev.ProbeStarted(probe_id="p2"),
        ev.ProbeOutput(probe_id="p2", stream="stderr", data=""),
        ev.ProbeFinished(probe_id="p2", status="failed", exit_status=1, duration_s=1.873,
                         summary="ModuleNotFoundError: No module named 'flashinfer.jit.cutedsl'",
                         detail={"error": "ModuleNotFoundError",
                                 "message": "No module named 'flashinfer.jit.cutedsl'"}),
        ev.ProbeQueued(probe_id="p3", host="gpu-a", kind="import",
                       args=["sglang.srt.layers.moe.flashinfer_cutedsl_moe:flashinfer_cutedsl_moe_masked"],
                       command="python3 -c ..."),
        ev.ProbeStarted(probe_id="p3"),
        ev.ProbeFinished(probe_id="p3", status="ok", exit_status=0, duration_s=4.210,
                         summary="imported in 3.98s"),
        ev.EvidenceLinked(hyp_id="h2", ref_kind="probe", ref_id="p2", stance="for",
                          summary="import flashinfer.jit.cutedsl -> ModuleNotFoundError"),
        ev.EvidenceLinked(hyp_id="h1", ref_kind="probe", ref_id="p3", stance="for",
                          summary="cutedsl MoE entry point imports"),
        ev.NoteAdded(text="restarting server with --moe-runner-backend flashinfer_cutedsl"),
        ev.GapComputed(floor_ms=3.2, ceiling_tps=312.5, bandwidth_gbs_total=14400.0,
                       measured_ms=97.0, gap=30.31, efficiency_pct=3.3,
                       inputs={"weights_gb": 46.08, "gpus": 8, "bandwidth_gbs": 1800}),
        ev.LogSourceOpened(source_id="l1", host="gpu-a", path="/var/log/sglang/server.log"),
        ev.LogLines(source_id="l1", lines=[
            "[2026-11-28 09:15:37] The server is fired up and ready to roll!",
            "[2026-11-28 09:16:06 TP0] Decode batch, #running-req: 1, #token: 852, token usage: 0.00, cuda graph: True, gen throughput (token/s): 10.31, #queue-req: 0",
            "[2026-11-28 09:16:10 TP0] Decode batch, #running-req: 1, #token: 892, token usage: 0.00, cuda graph: True, gen throughput (token/s): 10.29, #queue-req: 0",
        ]),
    ]
    for i, e in enumerate(out):
        e.t = round(i * 0.5, 3)
        e.wall = T0_WALL + e.t
    out.append(ev.SessionEnded(t=out[-1].t + 1, wall=T0_WALL + out[-1].t + 1))
    return out


def main() -> None:
    OUT.parent.mkdir(exist_ok=True)
    if OUT.exists():
        OUT.unlink()
    header = transcript.make_header("2026-11-28T09:20:00+00:00", ["localhost", "gpu-a"],
                                    name="example-moe-gap")
    header["perftriage"] = "example"  # stable across versions
    w = transcript.TranscriptWriter(OUT, header)
    for e in events():
        w.write(e)
    w.close()
    print(OUT)


if __name__ == "__main__":
    main()
