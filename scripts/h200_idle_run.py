"""A real run on an H200 for the self-checking hypotheses (run on the device machine).

    OUT=dir python3 scripts/h200_idle_run.py idle_decode_standin.py PACK [SECONDS]

Starts ``idle_decode_standin.py 16 SECONDS`` (16 GB bf16 weights, one GEMV per
layer; back to back for the first 40 %, then the host sleeps after every
layer so the GPU idles between kernels) and alongside it a headless cockpit
recording a transcript: localhost through NVML GPM, the stand-in's log
followed, roofline inputs set (16 GB, 1 GPU) so the live gap is recorded,
and the hypotheses of PACK added, so their checks are evaluated live and
every change of verdict is in the transcript. Writes to $OUT: the
transcript, the stand-in's figures and log, and ``perftriage check --json``
of the transcript at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(os.environ.get("OUT", "out"))
RUN = Path("/tmp/idlerun")
WEIGHTS_GB = 16.0


async def main(standin: str, pack_file: str, seconds: float) -> None:
    from perftriage.core.analysis import roofline
    from perftriage.core.checks import pack
    from perftriage.core.model import events as ev
    from perftriage.core.store.config import Config, HostConfig
    from perftriage.services.sources.checks import add_hypotheses
    from perftriage.services.cockpit import Cockpit
    from h200_gap_run import start_standin  # beside this script

    RUN.mkdir(parents=True, exist_ok=True)
    OUT.mkdir(parents=True, exist_ok=True)
    log = RUN / "server.log"
    log.write_text("")
    config = Config(hosts=[HostConfig(name="localhost", logs=[str(log)])])
    cockpit = Cockpit(config, RUN / "sessions", name="h200-idle-run", sample_interval=1.0)
    add_hypotheses(cockpit.session, pack.load(pack_file))
    await cockpit.start()
    proc, truth = await start_standin(standin, WEIGHTS_GB, seconds, log)
    weights = next(float(p.split("=")[1].split()[0]) for p in log.read_text().split()
                   if p.startswith("weights="))
    r = roofline.compute(gpus=1, weights_gb=weights, bandwidth_gbs=4814.3)
    cockpit.session.emit(ev.GapComputed(floor_ms=r.floor_ms, ceiling_tps=r.ceiling_tps,
                                        bandwidth_gbs_total=r.bandwidth_gbs_total,
                                        inputs={"weights_gb": weights, "gpus": 1}))
    ready = time.time()
    print(f"stand-in ready, weights {weights} GB", flush=True)
    switch = ready + seconds * 0.4
    await asyncio.to_thread(proc.wait)
    await asyncio.sleep(2)  # the last samples after the stand-in's end
    await cockpit.stop("done")
    transcript = cockpit.session.path
    for src, name in ((transcript, "transcript.jsonl"), (log, "server.log")):
        shutil.copy(src, OUT / name)
    (OUT / "groundtruth.json").write_text(json.dumps({"switch_wall": switch, "rows": truth}))
    res = subprocess.run([sys.executable, "-m", "perftriage", "check", str(transcript), "--pack",
                          pack_file, "--json"], capture_output=True, text=True, check=False)
    (OUT / "check.json").write_text(res.stdout + res.stderr)
    print(res.stdout[-3000:], res.stderr[-2000:])
    for row in truth:
        print(row)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2],
                     float(sys.argv[3]) if len(sys.argv) > 3 else 90.0))
