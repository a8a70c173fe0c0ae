"""The communication-bound check on 2 H200s (run on the device machine).

    OUT=dir python3 scripts/h200x2_nvlink_run.py scripts/standins/allreduce_standin.py [SECONDS]

Runs the NCCL all-reduce stand-in (NVLink traffic, DRAM mostly idle) while a
headless cockpit records localhost (NVML GPM: DRAM, NVLink rx/tx per GPU) with
roofline inputs set, so the live gap and its verdict are recorded, and runs
``perftriage gap --json`` in the middle. Writes the transcript, the CLI output,
the stand-in's own figures and a summary to $OUT.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import threading
import time

from h200_gap_run import OUT, RUN, perftriage  # same folder


async def main(standin: str, seconds: float) -> None:
    from perftriage.core.analysis import roofline
    from perftriage.core.model import events as ev
    from perftriage.core.store.config import Config
    from perftriage.services.cockpit import Cockpit

    RUN.mkdir(parents=True, exist_ok=True)
    OUT.mkdir(parents=True, exist_ok=True)
    cockpit = Cockpit(Config(), RUN / "sessions", name="h200x2-nvlink-run", sample_interval=1.0)
    await cockpit.start()
    r = roofline.compute(gpus=2, weights_gb=40.0, bandwidth_gbs=4814.3)
    cockpit.session.emit(ev.GapComputed(floor_ms=r.floor_ms, ceiling_tps=r.ceiling_tps,
                                        bandwidth_gbs_total=r.bandwidth_gbs_total,
                                        inputs={"weights_gb": 40.0, "gpus": 2}))
    lines: list[tuple[float, str]] = []
    proc = subprocess.Popen([sys.executable, standin, str(seconds), "256"], stdout=subprocess.PIPE,
                            text=True)

    def follow() -> None:
        for line in proc.stdout:
            lines.append((time.time(), line.strip()))

    threading.Thread(target=follow, daemon=True).start()
    while not lines and proc.poll() is None:
        await asyncio.sleep(0.2)
    start = time.time()
    await asyncio.sleep(6)
    cli = {"gap": await asyncio.to_thread(perftriage, "gap", "--weights-gb", "40", "--seconds",
                                          "5", "--json")}
    while proc.poll() is None:
        await asyncio.sleep(0.5)
    end = lines[-1][0] if lines else time.time()
    await asyncio.sleep(1)
    await cockpit.stop("done")
    shutil.copy(cockpit.session.path, OUT / "transcript.jsonl")
    (OUT / "allreduce.txt").write_text("\n".join(f"{t:.2f} {s}" for t, s in lines) + "\n")
    (OUT / "cli.json").write_text(json.dumps(cli, indent=1))
    state = cockpit.session.state
    busy = [s for s in state.gap_samples if start + 2 <= s.wall <= end - 1]
    hs = state.hosts["localhost"]
    busbw = [float(s.split("busbw ")[1].split()[0]) for _, s in lines if "busbw" in s]
    summary = {
        "samples": len(busy),
        "allreduce_busbw_gbs_median": statistics.median(busbw) if busbw else None,
        "nvlink_capacity_gbs": hs.info.get("nvlink_capacity_gbs"),
        "nvlink_pct_median": statistics.median(s.nvlink_pct for s in busy if s.nvlink_pct is not None)
        if busy else None,
        "idle_pct_median": statistics.median(s.idle_pct for s in busy if s.idle_pct is not None)
        if busy else None,
        "verdict_kinds": sorted({s.verdict_kind for s in busy}),
        "last_verdict": busy[-1].verdict if busy else None,
        "nvlink_tx_gbs_last": [g.nvlink_tx_gbs for g in hs.counters.gpus] if hs.counters else None,
        "gap_cli": (cli["gap"].get("out") or cli["gap"]),
    }
    (OUT / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 30.0))
