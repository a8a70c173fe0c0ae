"""A long, realistic transcript for the replay benchmark (and its tests).

One GPU host with 8 GPUs and localhost sampled at 1 Hz, the server log in
batches of decode lines twice a second, a probe, a note or a hypothesis
change every few minutes, an error line now and then. Deterministic for a
given ``n``; written with the real TranscriptWriter (``close_cleanly=False``
leaves it as a crash would: no summary line).
"""

from __future__ import annotations

import random
from pathlib import Path

from perftriage.core.model import events as ev
from perftriage.core.store import transcript

T0_WALL = 1796000000.0
DECODE = ("[2026-11-28 {hh:02d}:{mm:02d}:{ss:02d} TP0] Decode batch, #running-req: {run}, "
          "#token: {tok}, token usage: {use:.2f}, cuda graph: True, gen throughput (token/s): "
          "{tps:.2f}, #queue-req: 0")


def _gpus(rng: random.Random, k: int) -> list[ev.GpuSample]:
    return [
        ev.GpuSample(index=i, name="NVIDIA RTX PRO 6000 Blackwell Server Edition",
                     uuid=f"GPU-bench-{i}", util_pct=float(rng.randint(90, 100)),
                     mem_util_pct=float(rng.randint(3, 9)), mem_used_mib=88000.0 + i,
                     mem_total_mib=97887.0, power_w=float(rng.randint(150, 240)),
                     power_limit_w=600.0, temp_c=float(40 + (k + i) % 9),
                     sm_clock_mhz=2430.0, mem_clock_mhz=14001.0, pstate="P1")
        for i in range(8)
    ]


def generate(path: Path, n: int, *, close_cleanly: bool = True, seed: int = 15) -> Path:
    rng = random.Random(seed)
    header = transcript.make_header("2026-11-28T09:20:00+00:00", ["localhost", "gpu-a"],
                                    name=path.stem)
    w = transcript.TranscriptWriter(path, header, background=False)
    written = 0

    def put(e: ev.Event, t: float) -> None:
        nonlocal written
        e.t, e.wall = round(t, 6), T0_WALL + round(t, 6)
        w.write(e)
        written += 1

    put(ev.HostStatus(host="localhost", state="up"), 0.0)
    put(ev.HostStatus(host="gpu-a", state="up"), 0.01)
    put(ev.LogSourceOpened(source_id="l1", host="gpu-a", path="/tmp/sglang.log"), 0.02)
    hyp = 0
    probe = 0
    sec = 0
    while written < n:
        t = float(sec)
        put(ev.HostSample(host="localhost", cpu_pct=float(rng.randint(2, 9)),
                          mem_used_bytes=3 << 30, mem_total_bytes=24 << 30, load1=0.3,
                          gpu_error="no NVIDIA GPU"), t + 0.1)
        put(ev.HostSample(host="gpu-a", cpu_pct=float(rng.randint(10, 30)),
                          mem_used_bytes=180 << 30, mem_total_bytes=1 << 41, load1=8.5,
                          gpus=_gpus(rng, sec)), t + 0.2)
        for half in (0.4, 0.9):
            lines = []
            for _ in range(rng.randint(1, 3)):
                clock = 9 * 3600 + sec
                lines.append(DECODE.format(hh=clock // 3600 % 24, mm=clock // 60 % 60,
                                           ss=clock % 60, run=1, tok=850 + sec % 4000,
                                           use=0.01, tps=rng.uniform(10.1, 10.5)))
            if sec % 997 == 0:
                lines.append("[2026-11-28 09:18:30 TP0] Decode out of memory. "
                             "Try to lower your batch size.")
            put(ev.LogLines(source_id="l1", lines=lines), t + half)
        if sec % 240 == 60:
            probe += 1
            pid = f"p{probe}"
            put(ev.ProbeQueued(probe_id=pid, host="gpu-a", kind="import",
                               args=["flashinfer.cute"]), t + 0.5)
            put(ev.ProbeStarted(probe_id=pid), t + 0.55)
            put(ev.ProbeOutput(probe_id=pid, stream="stderr",
                               data="ModuleNotFoundError: No module named 'flashinfer.cute'\n"),
                t + 0.7)
            put(ev.ProbeFinished(probe_id=pid, status="failed", exit_status=1, duration_s=0.4,
                                 summary="ModuleNotFoundError: No module named 'flashinfer.cute'"),
                t + 0.75)
        if sec % 600 == 300:
            hyp += 1
            put(ev.HypothesisAdded(hyp_id=f"h{hyp}", title=f"hypothesis {hyp}"), t + 0.6)
            put(ev.NoteAdded(text=f"checked hypothesis {hyp}"), t + 0.65)
            put(ev.HypothesisUpdated(hyp_id=f"h{hyp}", status="refuted"), t + 0.66)
        sec += 1
    if close_cleanly:
        put(ev.SessionEnded(), float(sec))
        w.close()
    else:
        w._drain()  # written, but no summary line: like a crash
        w._fh.close()
    return path


def bench_file(n: int, folder: str = "compare") -> tuple[Path, float]:
    """The benchmarks' shared n-event transcript under $PERFTRIAGE_BENCH_DIR
    (made once), and its size in MiB."""
    import os

    base = Path(os.environ.get("PERFTRIAGE_BENCH_DIR", "/tmp/perftriage-bench")) / folder
    base.mkdir(parents=True, exist_ok=True)
    path = base / f"session-{n}.jsonl"
    if not path.exists():
        generate(path, n)
    return path, path.stat().st_size / 2**20
