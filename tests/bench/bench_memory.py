"""Memory bounds benchmark (not collected by pytest).

    python -m tests.bench.bench_memory [--mb 100] [--lines 1000000]

1. Peak RSS of ``perftriage probe shell`` printing N MB, against the same
   command printing nothing (the baseline, measured in the same run).
2. Transcript bytes written while a log floods N SGLang decode lines through
   the LogFollower (default transcript cap), against the log file's own size.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], capture_output=True)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n")


def probe_rss(config: Path, script: str) -> tuple[float, float]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, sys.executable, "-m", "perftriage",
                          "--config", str(config), "probe", "shell", script],
                         capture_output=True, text=True, check=True).stdout
    return float(out), time.perf_counter() - start


def flood_transcript(lines: int, workdir: Path) -> tuple[int, int, float]:
    import asyncio

    from perftriage.services.hosts.registry import HostRegistry, local_host
    from perftriage.services.logs.follower import LogFollower
    from perftriage.services.investigation.session import Session

    log = workdir / "flood.log"
    line = ("[2026-11-28 09:16:06 TP0] Decode batch, #running-req: 1, #token: 852, token usage: "
            "0.00, cuda graph: True, gen throughput (token/s): 10.31, #queue-req: 0\n")
    log.write_text(line * lines)
    session = Session(sessions_dir=workdir / "sessions")
    reg = HostRegistry()
    reg.add(local_host())
    follower = LogFollower(session, reg)

    async def main() -> float:
        start = time.perf_counter()
        sid = follower.open_file("localhost", str(log))
        src = session.state.logs[sid]
        while src.total_lines < lines:
            await asyncio.sleep(0.05)
        await follower.close_all()
        return time.perf_counter() - start

    took = asyncio.run(main())
    session.close()
    return log.stat().st_size, session.path.stat().st_size, took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--lines", type=int, default=1_000_000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cfg = work / "config.toml"
        cfg.write_text('[[hosts]]\nname = "localhost"\n')
        base, _ = probe_rss(cfg, "true")
        big, took = probe_rss(cfg, f"head -c {a.mb * 10**6} /dev/zero | tr '\\0' x; echo END")
        log_bytes, tr_bytes, flood_s = flood_transcript(a.lines, work)
    rows = [
        ("probe peak RSS, prints nothing (baseline)", f"{base:.0f} MiB", ""),
        (f"probe peak RSS, prints {a.mb} MB", f"{big:.0f} MiB", f"{took:.1f} s"),
        (f"log file, {a.lines:,} decode lines (baseline)", f"{log_bytes / 2**20:.0f} MiB", ""),
        ("transcript written while following it", f"{tr_bytes / 2**20:.1f} MiB", f"{flood_s:.1f} s"),
    ]
    w = max(len(r[0]) for r in rows)
    for r in rows:
        print(f"{r[0]:<{w}}  {r[1]:>10}  {r[2]:>7}")
    print(json.dumps({"rss_base_mib": base, "rss_big_mib": big, "log_bytes": log_bytes,
                      "transcript_bytes": tr_bytes}))


if __name__ == "__main__":
    main()
