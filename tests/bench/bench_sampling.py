"""Hosts sampling benchmark (not collected by pytest):

    python -m tests.bench.bench_sampling [--hosts 32] [--duration 60] [--baseline-duration 20]

One loopback OpenSSH sshd (tests/support/sshd.py) with the fake streaming
``nvidia-smi`` (tests/support/fake_nvidia_smi) first on the remote PATH; N hosts =
N SSH connections to it. In the same run:

1. perftriage: a headless Cockpit (session + reducer + transcript, no UI)
   sampling all N hosts at 1 Hz through the streaming remote sampler;
2. baseline: the same N connections sampled the naive way, one
   ``nvidia-smi --query-gpu`` + ``cat /proc/...`` command per host per
   second (a spawn per sample).

Measured over the window after every host has reported: the app's CPU time
as % of one core (``time.process_time`` of this process: asyncssh, parsing,
reducer, transcript), samples recorded, and processes spawned on the
"remote" (new PIDs below the sshd, seen by a separate poller process every
20 ms, so very short-lived ones can be missed: a lower bound). Prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.helpers import FAKE_NVIDIA_SMI_DIR
from tests.support.sshd import SshServer
from perftriage.core.model import events as ev
from perftriage.core.parse import nvsmi
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import Host, HostRegistry
from perftriage.core.store.config import HostConfig

FAKE_DIR = FAKE_NVIDIA_SMI_DIR

POLLER = r"""
import sys, time, psutil
root, seconds, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
def tree():
    try:
        return {p.pid for p in psutil.Process(root).children(recursive=True)}
    except psutil.Error:
        return set()
seen = tree()
new = set()
end = time.monotonic() + seconds
while time.monotonic() < end:
    cur = tree()
    new |= cur - seen
    seen |= cur
    time.sleep(0.02)
open(out, "w").write(str(len(new)))
"""


def registry(srv: SshServer, n: int) -> HostRegistry:
    from perftriage.transport.ssh import SSHTransport

    reg = HostRegistry()
    for i in range(n):
        name = f"h{i:02d}"
        t = SSHTransport(name, srv.alias, ssh_config=srv.ssh_config, pool_size=1)
        reg.add(Host(name, HostConfig(name=name, ssh=srv.alias), t))
    return reg


def start_poller(root_pid: int, seconds: float, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", POLLER, str(root_pid), str(seconds), str(out)])


async def connect_all(reg: HostRegistry) -> None:
    """Open the N connections one after another: 32 simultaneous SSH logins
    overwhelm a 2-core box (a thundering herd, not what is measured here)."""
    for host in reg.hosts.values():
        for attempt in range(3):
            try:
                await host.transport.run("true", timeout=60)
                break
            except Exception:  # noqa: BLE001 - retried, then re-raised
                if attempt == 2:
                    raise
                await asyncio.sleep(1)


async def run_cockpit(srv: SshServer, n: int, duration: float, tmp: Path) -> dict:
    reg = registry(srv, n)
    await connect_all(reg)
    cockpit = Cockpit(registry=reg, sessions_dir=tmp / "sessions", sample_interval=1.0)
    counts: dict[str, int] = {}

    def on_event(e: ev.Event) -> None:
        if isinstance(e, ev.HostSample) and e.gpus:
            counts[e.host] = counts.get(e.host, 0) + 1

    cockpit.session.subscribe(on_event)
    await cockpit.start()
    t0 = time.monotonic()
    while len(counts) < n:
        if time.monotonic() - t0 > 120:
            raise RuntimeError(f"only {len(counts)}/{n} hosts reported within 120 s")
        await asyncio.sleep(0.2)
    startup = time.monotonic() - t0
    await asyncio.sleep(3)  # let every stream settle
    out = tmp / "spawns-cockpit"
    poller = start_poller(srv.proc.pid, duration, out)
    before = sum(counts.values())
    cpu0, wall0 = time.process_time(), time.monotonic()
    await asyncio.sleep(duration)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    samples = sum(counts.values()) - before
    await asyncio.to_thread(poller.wait)
    stats = {s.gpu.starts + s.proc.starts for s in cockpit.remote_samplers.values()}
    print(f"perftriage: cpu {100 * cpu / wall:.2f}% samples {samples}", file=sys.stderr, flush=True)
    await asyncio.wait_for(cockpit.stop(), 30)
    spawns = int(out.read_text())
    return {"name": "perftriage (streaming)", "cpu_pct": 100 * cpu / wall, "samples": samples,
            "spawns": spawns, "startup_s": startup, "stream_starts": max(stats) if stats else 0,
            "transcript_bytes": cockpit.session.path.stat().st_size if cockpit.session.path else 0}


NAIVE_CMD = (nvsmi.query_command(nvsmi.QUERY_FIELDS)
             + "; cat /proc/stat /proc/meminfo /proc/loadavg")


async def run_naive(srv: SshServer, n: int, duration: float, tmp: Path) -> dict:
    reg = registry(srv, n)
    await connect_all(reg)
    samples = 0

    async def loop(host: Host) -> None:
        nonlocal samples
        while True:
            t = time.monotonic()
            res = await host.transport.run(NAIVE_CMD, timeout=10)
            if nvsmi.parse_query_csv(res.stdout):
                samples += 1
            await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - t)))

    tasks = [asyncio.create_task(loop(h)) for h in reg.hosts.values()]
    await asyncio.sleep(8)  # connect + warm
    out = tmp / "spawns-naive"
    poller = start_poller(srv.proc.pid, duration, out)
    before = samples
    cpu0, wall0 = time.process_time(), time.monotonic()
    await asyncio.sleep(duration)
    cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
    got = samples - before
    print(f"baseline: cpu {100 * cpu / wall:.2f}% samples {got}", file=sys.stderr, flush=True)
    await asyncio.to_thread(poller.wait)
    for t in tasks:
        t.cancel()
    await asyncio.wait(tasks, timeout=10)  # a run() stuck on a dead channel must not hang us
    await asyncio.wait_for(reg.close(), 20)
    return {"name": "baseline (spawn per sample)", "cpu_pct": 100 * cpu / wall, "samples": got,
            "spawns": int(out.read_text()), "startup_s": None, "stream_starts": None,
            "transcript_bytes": None}


def table(rows: list[dict], n: int, duration: float) -> str:
    head = (f"| {'sampler':<28} | hosts | app CPU % of one core | samples | "
            f"remote spawns | spawns/sample |")
    lines = [head, "|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|"]
    for r in rows:
        per = r["spawns"] / r["samples"] if r["samples"] else float("nan")
        lines.append(f"| {r['name']:<28} | {n:>5} | {r['cpu_pct']:>21.2f} | {r['samples']:>7} | "
                     f"{r['spawns']:>13} | {per:>13.3f} |")
    return "\n".join(lines)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=32)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--baseline-duration", type=float, default=20.0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        # the fake's `#!/usr/bin/env python3` must find a real interpreter, not a shim
        path = f"{FAKE_DIR}:{Path(sys.executable).parent}:{os.environ['PATH']}"
        # HOME: a clean remote account. This box's ~/.bashrc runs `pyenv init`
        # (a locked `pyenv rehash`) in every SSH session, which a real GPU
        # server would not: 32 logins then queue on that lock for minutes.
        home = tmp / "home"
        home.mkdir()
        srv = SshServer(tmp / "sshd", env={"PATH": path, "HOME": str(home)},
                        max_sessions=16).start()
        try:
            rows = [await run_cockpit(srv, a.hosts, a.duration, tmp)]
            if a.baseline_duration > 0:
                rows.append(await run_naive(srv, a.hosts, a.baseline_duration, tmp))
        except RuntimeError:
            print((tmp / "sshd" / "sshd.log").read_text()[-3000:], file=sys.stderr)
            raise
        finally:
            srv.stop()
    print(f"\nHosts sampling: {a.hosts} loopback SSH hosts at 1 Hz; perftriage window "
          f"{a.duration:g} s, baseline window {a.baseline_duration:g} s "
          f"(cores here: {os.cpu_count()})\n")
    print(table(rows, a.hosts, a.duration))
    r = rows[0]
    print(f"\nperftriage: all hosts reporting after {r['startup_s']:.1f} s; "
          f"max stream starts per host: {r['stream_starts']} (2 = both streams started once, never restarted); "
          f"transcript {r['transcript_bytes'] / 1024:.0f} KiB")
    if a.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    asyncio.run(main())
