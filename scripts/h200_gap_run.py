"""The bandwidth-gap check on an H200 (run on the device machine).

    OUT=dir python3 scripts/h200_gap_run.py scripts/standins/decode_standin.py [SECONDS]

Starts ``decode_standin.py 40 SECONDS`` (40 GB bf16 weights; slow phase with
an fp32 upcast per token for the first 40 %, then a bf16 GEMV), and alongside
it a headless cockpit recording a transcript: localhost through NVML GPM and
the same GPU as a second host, ``viadmon``, read through one long-lived
``nvidia-smi dmon --gpm-metrics`` stream (the remote path), and as a third,
``viapynvml``, through the remote pynvml loop, the stand-in's log
followed, roofline inputs set (40 GB, 1 GPU) so the live gap is recorded.
During the slow and the fast phase it runs ``perftriage gap --json``, and
``perftriage status --json`` in the fast phase. Writes to $OUT: the
transcript, the CLI outputs, the stand-in's figures, its log and a summary
comparing the counters with the stand-in's counted bytes per phase.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

OUT = Path(os.environ.get("OUT", "out"))
RUN = Path("/tmp/gaprun")
WEIGHTS_GB = 40.0


def perftriage(*args: str, timeout: float = 60) -> dict:
    res = subprocess.run([sys.executable, "-m", "perftriage", *args], capture_output=True,
                         text=True, timeout=timeout, check=False)
    try:
        return {"rc": res.returncode, "t": time.time(), "out": json.loads(res.stdout)}
    except ValueError:
        return {"rc": res.returncode, "t": time.time(), "stdout": res.stdout[-2000:],
                "stderr": res.stderr[-2000:]}


def follow_truth(proc, truth: list) -> None:
    for line in proc.stdout:
        parts = dict(p.split("=", 1) for p in line.split() if "=" in p)
        truth.append({"wall": time.time(), **parts})


async def start_standin(standin: str, weights_gb: float, seconds: float, log: Path):
    """Start the stand-in, read its figures in a thread; (process, figures)
    once its log says it is ready."""
    truth: list[dict] = []
    proc = subprocess.Popen([sys.executable, standin, str(weights_gb), str(seconds), str(log)],
                            stdout=subprocess.PIPE, text=True)
    threading.Thread(target=follow_truth, args=(proc, truth), daemon=True).start()
    while "fired up" not in log.read_text():
        await asyncio.sleep(0.2)
    return proc, truth


async def main(standin: str, seconds: float) -> None:
    from perftriage.core.analysis import roofline
    from perftriage.core.model import events as ev
    from perftriage.core.store.config import Config, HostConfig
    from perftriage.services.cockpit import Cockpit

    RUN.mkdir(parents=True, exist_ok=True)
    OUT.mkdir(parents=True, exist_ok=True)
    log = RUN / "server.log"
    log.write_text("")
    config = Config(hosts=[HostConfig(name="localhost", logs=[str(log)]),
                           # python "": no pynvml path, so this host is read through dmon
                           HostConfig(name="viadmon", preamble="export PERFTRIAGE_PATH=dmon",
                                      python=""),
                           # the remote path through the host's own pynvml (one python loop)
                           HostConfig(name="viapynvml", preamble="export PERFTRIAGE_PATH=pynvml")])
    cockpit = Cockpit(config, RUN / "sessions", name="h200-gap-run", sample_interval=1.0)
    await cockpit.start()
    r = roofline.compute(gpus=1, weights_gb=WEIGHTS_GB, bandwidth_gbs=4814.3)
    cockpit.session.emit(ev.GapComputed(floor_ms=r.floor_ms, ceiling_tps=r.ceiling_tps,
                                        bandwidth_gbs_total=r.bandwidth_gbs_total,
                                        inputs={"weights_gb": WEIGHTS_GB, "gpus": 1}))
    proc, truth = await start_standin(standin, WEIGHTS_GB, seconds, log)
    ready = time.time()
    print(f"stand-in ready after {ready - proc_start:.1f}s", flush=True)
    switch = ready + seconds * 0.4
    gap_args = ["gap", "--weights-gb", str(WEIGHTS_GB), "--log", str(log), "--seconds", "5", "--json"]
    cli: dict = {}
    await asyncio.sleep(8)
    cli["gap_slow"], cli["gap_slow_viadmon"] = await asyncio.gather(  # both inside the phase
        asyncio.to_thread(perftriage, *gap_args),
        asyncio.to_thread(perftriage, "--config", str(write_config(log)), "gap", "--host",
                          "viadmon", *gap_args[1:]))
    await asyncio.sleep(max(0.0, switch + 8 - time.time()))
    cli["gap_fast"], cli["gap_fast_viadmon"] = await asyncio.gather(
        asyncio.to_thread(perftriage, *gap_args),
        asyncio.to_thread(perftriage, "--config", str(write_config(log)), "gap", "--host",
                          "viadmon", *gap_args[1:]))
    cli["status_fast"] = await asyncio.to_thread(perftriage, "status", "--json")
    cli["switch_wall"] = switch
    while proc.poll() is None:
        await asyncio.sleep(0.5)
    await asyncio.sleep(2)
    await cockpit.stop("done")
    transcript = cockpit.session.path
    shutil.copy(transcript, OUT / "transcript.jsonl")
    shutil.copy(log, OUT / "server.log")
    (OUT / "cli.json").write_text(json.dumps(cli, indent=1))
    (OUT / "groundtruth.json").write_text(json.dumps(truth))
    summary = summarize(cockpit.session.state, truth, switch)
    (OUT / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    for k in ("gap_slow", "gap_fast", "gap_slow_viadmon", "gap_fast_viadmon"):
        o = cli[k].get("out") or {}
        print(k, o.get("source"), o.get("dram_bw_gbs"), o.get("useful_bw_gbs"), o.get("gap"),
              "|", o.get("verdict"), cli[k].get("stderr", ""))


def write_config(log: Path) -> Path:
    path = RUN / "config.toml"
    path.write_text('[[hosts]]\nname = "viadmon"\npreamble = "export PERFTRIAGE_PATH=dmon"\n'
                    'python = ""\n')
    return path


def summarize(state, truth: list[dict], switch: float) -> dict:
    """Per phase and host: median DRAM GB/s from the counters vs the stand-in's
    counted useful bytes; the verdicts recorded live."""
    fast = [t for t in truth if t.get("phase") == "fast"][2:]
    slow = [t for t in truth if t.get("phase") == "slow"][2:]
    out: dict = {"phases": {}}
    for name, rows in (("slow", slow), ("fast", fast)):
        if not rows:
            continue
        lo, hi = rows[0]["wall"], rows[-1]["wall"]
        counted = statistics.median(float(t["bw_TBps"]) for t in rows) * 1000
        phase = {"counted_useful_gbs": round(counted, 1),
                 "tps": statistics.median(float(t["tps"]) for t in rows),
                 "ms_per_token": statistics.median(float(t["ms_per_token"]) for t in rows)}
        samples = [s for s in state.gap_samples if lo <= s.wall <= hi]
        for host in sorted({s.host for s in samples}):
            mine = [s for s in samples if s.host == host]
            dram = statistics.median(s.dram_bw_gbs for s in mine if s.dram_bw_gbs is not None)
            phase[host] = {
                "samples": len(mine), "dram_bw_gbs": round(dram, 1),
                "dram_busy_pct": statistics.median(s.dram_busy_pct for s in mine),
                "vs_counted_pct": round((dram / counted - 1) * 100, 2),
                "verdict_kinds": sorted({s.verdict_kind for s in mine}),
                "last_verdict": mine[-1].verdict, "gap": statistics.median(
                    s.gap for s in mine if s.gap is not None)}
        out["phases"][name] = phase
    return out


if __name__ == "__main__":
    proc_start = time.time()
    asyncio.run(main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 75.0))
