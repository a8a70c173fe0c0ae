"""Flood benchmark of the Logs pane (not collected by pytest).

    python -m tests.bench.bench_logs [--lines 1000000] [--runs 5] [--local]

A 1M-line SGLang-style log (the simulator's format: decode/prefill lines
mixed with request lines) is followed with the real path — guarded
``tail -n +1 -F`` over the loopback OpenSSH sshd (tests/support/sshd.py) through
SSHTransport, LogFollower, the reducer (ring + metric parsing) and the
line-API LogView in a headless app — and compared with a raw asyncssh
chunked read of the same file in the same run (median of three reads).
Each run is a fresh Python process (the app and its baseline), as a user
runs the app: no run inherits another's heap.
Reports lines/s reaching the widget, the app process's CPU per line (its
threads; the parse helper process is not counted), key-press latency p50/p95 during the
flood (``e`` = next error, a real action, and ``up`` = scroll one line, a
trivial one: queueing delay alone), and RSS after the flood.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import psutil
from perftriage.transport.ssh_options import SshOptions

TARGETS = {"lines_s": 200_000, "p95_ms": 50.0, "rss_mib": 150.0}


def make_file(path: Path, n: int) -> None:
    from perftriage.simulator.sglang_sim import Steady

    sim = Steady(seed=1, error_every=5000)
    req = '[2026-11-28 09:15:37] INFO:     127.0.0.1:51240 - "POST /generate HTTP/1.1" 200 OK'
    with open(path, "w") as fh:
        buf = []
        for i in range(n):
            buf.append(sim.line() if i % 4 == 0 else req)
            if len(buf) == 10000:
                fh.write("\n".join(buf) + "\n")
                buf.clear()
        if buf:
            fh.write("\n".join(buf) + "\n")


async def raw_asyncssh(server, path: Path, n: int) -> float:
    import asyncssh

    async with asyncssh.connect(server.host, port=server.port, username=server.user,
                                client_keys=[str(server.client_key)],
                                known_hosts=str(server.known_hosts)) as conn:
        t0 = time.perf_counter()
        proc = await conn.create_process(f"cat {path}", encoding=None)
        lines = 0
        while True:
            chunk = await proc.stdout.read(256 * 1024)
            if not chunk:
                break
            lines += chunk.count(b"\n")
        dt = time.perf_counter() - t0
        assert lines == n, lines
        return n / dt


async def flood(host, path: Path, n: int) -> dict:
    from perftriage.ui.app import PerftriageApp
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts.registry import HostRegistry
    from perftriage.ui.widgets.logs import LogsPane

    reg = HostRegistry()
    reg.add(host)
    with tempfile.TemporaryDirectory() as sessions:
        cockpit = Cockpit(registry=reg, sessions_dir=Path(sessions), sample_interval=60)
        app = PerftriageApp(cockpit)
        lat: dict[str, list[float]] = {"e": [], "up": []}
        async with app.run_test(size=(160, 50)) as pilot:
            pane = app.screen.query_one(LogsPane)
            view = pane.view
            view.focus()
            await pilot.pause()
            cpu0 = time.process_time()
            t0 = time.perf_counter()
            sid = cockpit.logs.open_file(host.name, str(path))
            state = cockpit.session.state
            # key latency: real Key events posted to the app, each timed until
            # its bound action has run on the focused LogView. Two keys, so that
            # queueing delay and the action's own cost can be told apart:
            #   e  = jump to the next error line (a real user action; bisects
            #        the view's error index)
            #   up = scroll one line up (a trivial action: its latency is the
            #        time the key waited behind the flood)
            from textual import events

            done: dict[str, list[float]] = {"e": [], "up": []}
            original_error = view.action_next_error
            original_up = view.action_scroll_up

            def stamped_error(step: int) -> None:
                original_error(step)
                done["e"].append(time.perf_counter())

            def stamped_up(*args, **kwargs) -> None:
                try:
                    original_up(*args, **kwargs)
                finally:  # SkipAction when already at the top: still handled
                    done["up"].append(time.perf_counter())

            view.action_next_error = stamped_error  # type: ignore[method-assign]
            view.action_scroll_up = stamped_up  # type: ignore[method-assign]

            async def press(key: str) -> None:
                s = time.perf_counter()
                stamps = done[key]
                before = len(stamps)
                app.post_message(events.Key(key, "e" if key == "e" else None))
                while len(stamps) == before:
                    await asyncio.sleep(0.001)
                    if time.perf_counter() - s > 30:
                        break
                lat[key].append((stamps[-1] - s) * 1000 if len(stamps) > before else 30_000.0)

            while view.index._seen.get(sid, 0) < n:
                await press("e")
                await press("up")
                await view.run_action("follow")
                await asyncio.sleep(0.05)
                if time.perf_counter() - t0 > 300:
                    raise SystemExit(f"timeout: {state.logs[sid].total_lines} lines")
            dt = time.perf_counter() - t0
            cpu = time.process_time() - cpu0
            rss = psutil.Process().memory_info().rss / 2**20
            ring = len(state.logs[sid].lines)
            gen = len(state.logs[sid].metrics.gen_tps)
            await cockpit.logs.close(sid)
            await pilot.press("q")
        def p50(xs: list[float]) -> float:
            return statistics.median(xs) if xs else float("nan")

        def p95(xs: list[float]) -> float:
            xs = sorted(xs)
            return xs[min(len(xs) - 1, -(-len(xs) * 95 // 100) - 1)] if xs else float("nan")

        return {
            "lines_s": n / dt,
            "cpu_us": cpu / n * 1e6,
            "p50_ms": p50(lat["e"]),
            "p95_ms": p95(lat["e"]),
            "up_p50_ms": p50(lat["up"]),
            "up_p95_ms": p95(lat["up"]),
            "presses": len(lat["e"]),
            "rss_mib": rss,
            "ring": ring,
            "series": gen,
            "errors": len(view.index.errors),
        }


async def one_run(path: Path, n: int, local: bool, workdir: Path) -> tuple[float | None, dict]:
    """(baseline lines/s or None, flood result) of one run, sshd started afresh."""
    server = None
    try:
        if local:
            from perftriage.services.hosts.registry import local_host

            host = local_host()
            base = None
        else:
            from tests.support.sshd import SshServer
            from perftriage.core.store.config import HostConfig
            from perftriage.services.hosts.registry import Host
            from perftriage.transport.ssh import SSHTransport

            server = SshServer(workdir).start()
            # the raw read alone varies by a third between tries on a shared
            # 2-CPU box: the median of three, right before the flood
            base = statistics.median([await raw_asyncssh(server, path, n) for _ in range(3)])
            hc = HostConfig(name="bench", ssh=server.alias)
            host = Host("bench", hc, SSHTransport.from_config(hc, SshOptions(config=server.ssh_config)))
        res = await flood(host, path, n)
        await host.transport.close()
    finally:
        if server is not None:
            server.stop()
    return base, res


def run_in_fresh_process(path: Path, n: int, local: bool, workdir: Path) -> tuple[float | None, dict]:
    """One run in its own Python process, as a user runs the app: no run
    inherits another's garbage, caches or heap (RSS and speed are one app's)."""
    import json
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "tests.bench.bench_logs", "--child", str(path), str(workdir),
           "--lines", str(n)] + (["--local"] if local else [])
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    base, res = json.loads(out.strip().splitlines()[-1])
    return base, res


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=1, help="repeat; the table gives medians")
    ap.add_argument("--local", action="store_true", help="local transport instead of sshd")
    ap.add_argument("--child", nargs=2, metavar=("LOG", "WORKDIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    n = args.lines
    if args.child:  # one run, for the parent (run_in_fresh_process): JSON on stdout
        import json

        base, res = await one_run(Path(args.child[0]), n, args.local, Path(args.child[1]))
        print(json.dumps([base, res]))
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-logs-"))
    path = tmp / "flood.log"
    make_file(path, n)
    size_mib = path.stat().st_size / 2**20
    bases: list[float] = []
    runs: list[dict] = []
    for i in range(args.runs):
        base, res = run_in_fresh_process(path, n, args.local, tmp / f"sshd{i}")
        if base is not None:
            bases.append(base)
            res["ratio"] = res["lines_s"] / base
        runs.append(res)
        if args.runs > 1:
            ratio = f" = {res['ratio']:.3f} of {base:,.0f}" if base else ""
            print(f"run {i + 1}: {res['lines_s']:,.0f} lines/s{ratio}; app CPU "
                  f"{res['cpu_us']:.2f} us/line; RSS {res['rss_mib']:.0f} MiB; e p95 "
                  f"{res['p95_ms']:.1f} ms, up p95 {res['up_p95_ms']:.1f} ms", flush=True)

    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    via = "local" if args.local else "loopback sshd"
    what = f"median of {args.runs} runs" if args.runs > 1 else "one run"
    print(f"\nLogs flood: {n:,} lines ({size_mib:.0f} MiB) via {via}, "
          f"{os.cpu_count()} CPUs, {what}, load {os.getloadavg()[0]:.1f}\n")
    print("| measure | result | target |\n|---|---|---|")
    if bases:
        print(f"| baseline: raw asyncssh 256 KiB chunked read | "
              f"{statistics.median(bases):,.0f} lines/s | |")
    print(f"| end-to-end to the Logs widget | {med('lines_s'):,.0f} lines/s | "
          f">= {TARGETS['lines_s']:,} |")
    if bases:
        print(f"| end-to-end / baseline (same run) | {med('ratio'):.3f} | >= 0.2 |")
    print(f"| app process CPU per line during the flood (all its threads; "
          f"the parse helper's own process not counted) | {med('cpu_us'):.2f} us | |")
    r = runs[-1]
    print(f"| key latency p50 / p95 during flood, `e` next error "
          f"({r['presses']} presses, {r['errors']} error lines in view) | "
          f"{med('p50_ms'):.1f} / {med('p95_ms'):.1f} ms | p95 <= {TARGETS['p95_ms']:.0f} ms |")
    print(f"| key latency p50 / p95 during flood, `up` scroll (trivial action) | "
          f"{med('up_p50_ms'):.1f} / {med('up_p95_ms'):.1f} ms | p95 <= {TARGETS['p95_ms']:.0f} ms |")
    print(f"| RSS after {n:,} lines (ring {r['ring']:,}, {r['series']} gen points) | "
          f"{med('rss_mib'):.0f} MiB | <= {TARGETS['rss_mib']:.0f} MiB |")


if __name__ == "__main__":
    asyncio.run(main())
