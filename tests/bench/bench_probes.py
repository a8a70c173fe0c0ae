"""Probe queue benchmark (not collected by pytest):

    python -m tests.bench.bench_probes [N]

On one loopback OpenSSH sshd (tests/support/sshd.py), in the same run:

1. baseline: a raw asyncssh loop — one connection, N × ``conn.run(cmd)``
   (a channel and a shell per command) with the queue's concurrency cap;
2. the SSH transport alone (its pooled shells), same cap, no queue;
3. the probe queue: N ``import json`` probes through ProbeRunner and the
   SSH transport, every event recorded to a transcript;
   (1-3 alternate, best of ROUNDS each, because the box is shared);
4. key-press latency in the cockpit (``app.run_test``): press ``a``,
   measure until its action runs — idle, then while N probes run.

Prints a table.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import asyncssh

from perftriage.core import probes
from perftriage.core.store.config import Config, HostConfig
from perftriage.services.hosts.registry import HostRegistry, make_host
from perftriage.services.probes.runner import ProbeRunner
from perftriage.services.investigation.session import Session

from tests.support.sshd import SshServer
from perftriage.transport.ssh_options import SshOptions

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
PRESSES = 30
ROUNDS = 2


def host_config(srv: SshServer) -> HostConfig:
    return HostConfig(name="bench", ssh=srv.alias, python=sys.executable)


async def raw_asyncssh(srv: SshServer, command: str, n: int, cap: int) -> float:
    sem = asyncio.Semaphore(cap)
    async with asyncssh.connect(srv.host, port=srv.port, username=srv.user,
                                client_keys=[str(srv.client_key)],
                                known_hosts=str(srv.known_hosts), config=None) as conn:
        await conn.run("true")  # connected and warm, like the queue's first probe

        async def one() -> None:
            async with sem:
                r = await conn.run(command, check=False)
                assert r.exit_status == 0, r.stderr

        start = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(n)))
        return time.perf_counter() - start


async def transport_only(srv: SshServer, command: str, n: int, cap: int) -> float:
    """The SSH transport without the queue (no events, no transcript)."""
    host = make_host(host_config(srv), SshOptions(config=srv.ssh_config))
    sem = asyncio.Semaphore(cap)
    try:
        await host.transport.run("true", timeout=30)

        async def one() -> None:
            async with sem:
                r = await host.transport.run(command, timeout=60)
                assert r.exit_status == 0, r.stderr

        start = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(n)))
        return time.perf_counter() - start
    finally:
        await host.transport.close()


async def queue(srv: SshServer, n: int, tmp: Path) -> tuple[float, int, float]:
    reg = HostRegistry()
    reg.add(make_host(host_config(srv), SshOptions(config=srv.ssh_config)))
    session = Session(name="bench", hosts=reg.names, sessions_dir=tmp)
    runner = ProbeRunner(session, reg)
    try:
        warm = runner.enqueue("bench", "shell", ["true"])  # connect first, as the raw loop does
        await runner.wait(warm)
        start = time.perf_counter()
        ids = [runner.enqueue("bench", "import", ["json"]) for _ in range(n)]
        await runner.wait(ids)
        took = time.perf_counter() - start
        ok = sum(session.state.probes[i].status == "ok" for i in ids)
        mean = statistics.mean(session.state.probes[i].duration_s for i in ids)
        return took, ok, mean
    finally:
        await reg.close()
        session.close()


async def key_latency(srv: SshServer, n: int, tmp: Path) -> tuple[list[float], list[float], int]:
    from perftriage.ui.app import PerftriageApp
    from perftriage.services.cockpit import Cockpit

    config = Config(hosts=[host_config(srv)])
    reg = HostRegistry()
    reg.add(make_host(host_config(srv), SshOptions(config=srv.ssh_config)))
    app = PerftriageApp(Cockpit(config, sessions_dir=tmp, registry=reg, sample_interval=1.0))
    handled: list[float] = []
    original = app.action_probe_all_hosts

    def timed() -> None:
        handled.append(time.perf_counter())
        original()

    app.action_probe_all_hosts = timed  # type: ignore[method-assign]

    async def measure(pilot, presses: int, until=None) -> list[float]:
        out = []
        while len(out) < presses or (until is not None and not until()):
            handled.clear()
            t0 = time.perf_counter()
            await pilot.press("a")
            if handled:
                out.append(handled[0] - t0)
            await asyncio.sleep(0.03)
        return out

    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0.5)
        idle = await measure(pilot, PRESSES)
        ids = [app.cockpit.probes.enqueue("bench", "import", ["json"]) for _ in range(n)]
        busy = await measure(pilot, PRESSES, until=lambda: all(
            app.session.state.probes[i].finished for i in ids))
        still = sum(not app.session.state.probes[i].finished for i in ids)
        await app.cockpit.probes.wait(ids)
        await pilot.press("q")
    return idle, busy, still


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000


async def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        srv = SshServer(tmp / "sshd").start()
        try:
            command = probes.build_command("import", ["json"],
                                           probes.HostContext(python=sys.executable))
            cap = 4
            # alternate the three, best of ROUNDS each: the box is shared and noisy
            raws, bares, queues = [], [], []
            for _ in range(ROUNDS):
                raws.append(await raw_asyncssh(srv, command, N, cap))
                bares.append(await transport_only(srv, command, N, cap))
                queues.append(await queue(srv, N, tmp))
            raw, bare = min(raws), min(bares)
            took, ok, mean = min(queues)
            idle, busy, still = await key_latency(srv, N, tmp)
        finally:
            srv.stop()
    load = ", ".join(f"{x:.0f}" for x in os.getloadavg())
    print(f"\nProbe queue benchmark: {N} × `import json` on one loopback sshd, cap {cap}; "
          f"{os.cpu_count()} CPUs, load average {load}\n")
    print(f"| {'measure':<54} | {'value':>16} |")
    print(f"|{'-' * 56}|{'-' * 17}:|")
    rows = [
        ("raw asyncssh loop (conn.run), total", f"{raw:.2f} s"),
        ("raw asyncssh loop, per probe", f"{raw / N * 1000:.1f} ms"),
        ("SSH transport alone (pooled shells, no queue), total", f"{bare:.2f} s"),
        ("probe queue (ProbeRunner + SSH transport), total", f"{took:.2f} s"),
        ("probe queue, per probe (wall / N)", f"{took / N * 1000:.1f} ms"),
        ("probe queue, mean probe duration", f"{mean * 1000:.1f} ms"),
        ("queue / raw asyncssh", f"{took / raw:.2f}×"),
        ("queue / transport alone (the queue's own overhead)", f"{took / bare:.2f}×"),
        ("probes ok", f"{ok}/{N}"),
        ("key latency idle, p50 / p95", f"{pct(idle, .5):.1f} / {pct(idle, .95):.1f} ms"),
        (f"key latency while {N} probes run, p50 / p95", f"{pct(busy, .5):.1f} / "
                                                        f"{pct(busy, .95):.1f} ms"),
        ("key latency while running, max", f"{max(busy) * 1000:.1f} ms"),
        ("key presses while the probes ran (idle: 30)", f"{len(busy)}"),
        ("probes unfinished when the presses ended", f"{still}"),
    ]
    for name, value in rows:
        print(f"| {name:<54} | {value:>16} |")


if __name__ == "__main__":
    asyncio.run(main())
