"""What the stacks probe costs (not collected by pytest):

    python -m tests.bench.bench_stacks [--part dump|overhead|all] [--rounds N]

Baselines measured in the same run, rounds interleaved (the box is shared):

1. ``dump``: a ``stacks`` dump of a real Python process (the stall target)
   through the ProbeRunner over one warm SSH connection to a loopback sshd,
   next to a ``shell true`` probe over the same connection (what any probe
   costs there). Target: the dump ≤ 1 s.
2. ``overhead``: the stall target's own loop rate (steps a second, printed
   by the target itself) in windows without py-spy and with ``py-spy record
   --nonblocking -r 100`` attached, alternating. Target: the record costs the
   loop ≤ 2 % of its steps a second (median over the windows). Also the
   loop's CPU time a step either way (what the process itself pays) and
   py-spy's own CPU share of a core (what a box without a spare core pays).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from tests.bench.table import print_table
from tests.support.stall_target import running

PY_SPY = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")


async def _dump_rounds(rounds: int, tag: str) -> tuple[list[float], list[float], str]:
    from perftriage.core.store.config import HostConfig
    from perftriage.services.hosts.registry import HostRegistry, make_host
    from perftriage.services.investigation.session import Session
    from perftriage.services.probes.runner import ProbeRunner
    from perftriage.transport.ssh_options import SshOptions
    from tests.support.sshd import SshServer

    root = Path(tempfile.mkdtemp(prefix="bench-stacks-"))
    home = root / "home"
    home.mkdir()
    server = SshServer(root / "sshd", env={"HOME": str(home)}).start()
    try:
        reg = HostRegistry()
        reg.add(make_host(HostConfig(name="gpu", ssh=server.alias, python=sys.executable),
                          SshOptions(config=server.ssh_config)))
        runner = ProbeRunner(Session(hosts=reg.names), reg)

        async def one(kind: str, args: list[str]) -> tuple[float, str]:
            t = time.perf_counter()
            pid = runner.enqueue("gpu", kind, args, timeout=60)
            await runner.wait(pid)
            p = runner.session.state.probes[pid]
            assert p.status == "ok", (kind, p.status, p.summary)
            return time.perf_counter() - t, p.summary

        await one("shell", ["true"])  # the connection is warm from here on
        dumps, shells, summary = [], [], ""
        for _ in range(rounds):
            shells.append((await one("shell", ["true"]))[0])
            took, summary = await one("stacks", ["--match", tag])
            dumps.append(took)
        await runner.close()
        await reg.close()
        return dumps, shells, summary
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def dump_rows(rounds: int) -> list[tuple[str, str, str]]:
    with running() as (_proc, tag):
        dumps, shells, summary = asyncio.run(_dump_rounds(rounds, tag))
    med = statistics.median(dumps)
    return [
        ("`shell true` probe over the warm connection (baseline)",
         f"{statistics.median(shells):.3f}", f"max {max(shells):.3f}, {rounds} rounds"),
        ("`stacks` dump of the stall target over the same connection", f"{med:.3f}",
         f"max {max(dumps):.3f}; target ≤ 1 s: {'met' if med <= 1.0 else 'NOT met'}; "
         f"{summary[:60]}"),
    ]


def _rates(proc: subprocess.Popen, stop: threading.Event,
           out: list[tuple[float, float, float]]) -> None:
    """(monotonic time, steps a second, CPU ms a step) from the target's
    ``steps N SECONDS CPU_SECONDS`` lines."""
    assert proc.stdout is not None
    for line in proc.stdout:
        if stop.is_set():
            return
        parts = line.split()
        if len(parts) == 4 and parts[0] == "steps" and int(parts[1]) > 0:
            out.append((time.monotonic(), int(parts[1]) / float(parts[2]),
                        1000.0 * float(parts[3]) / int(parts[1])))


def overhead_rows(rounds: int, window_s: float) -> list[tuple[str, str, str]]:
    assert PY_SPY, "py-spy is not installed (the test extra)"
    rates: list[tuple[float, float, float]] = []
    spy_cpu = spy_wall = 0.0
    stop = threading.Event()
    windows: list[tuple[str, float, float]] = []  # (on/off, start, end)
    with running("--report") as (proc, _tag):
        reader = threading.Thread(target=_rates, args=(proc, stop, rates), daemon=True)
        reader.start()
        time.sleep(2.0)  # warm up
        out = tempfile.mkdtemp(prefix="bench-stacks-rec-")
        for i in range(rounds):
            t0 = time.monotonic()
            time.sleep(window_s)
            windows.append(("off", t0, time.monotonic()))
            t0 = time.monotonic()
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([PY_SPY, "record", "--pid", str(proc.pid), "--format", "raw",
                            "--nonblocking", "-r", "100", "-d", f"{window_s:g}", "--threads",
                            "-o", os.path.join(out, f"{i}.txt")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            spy_cpu += (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            spy_wall += time.monotonic() - t0
            windows.append(("on", t0, time.monotonic()))
        stop.set()
        shutil.rmtree(out, ignore_errors=True)

    def median_in(kind: str, col: int) -> tuple[float, int]:
        # a reading counts for the window that holds its whole second
        got = [r[col] for r in rates for k, a, b in windows if k == kind and a + 1.0 <= r[0] <= b]
        return statistics.median(got), len(got)

    off, n_off = median_in("off", 1)
    on, n_on = median_in("on", 1)
    cpu_off, _ = median_in("off", 2)
    cpu_on, _ = median_in("on", 2)
    cost = 100.0 * (1.0 - on / off)
    return [
        ("stall target's loop without py-spy (baseline)", f"{off:.1f}",
         f"steps/s, median of {n_off} one-second readings"),
        ("the same with `py-spy record --nonblocking -r 100`", f"{on:.1f}",
         f"steps/s, median of {n_on} readings"),
        ("cost of the 100 Hz record", f"{cost:.2f} %",
         f"target ≤ 2 %: {'met' if cost <= 2.0 else 'NOT met'}"),
        ("the loop's CPU a step without / with py-spy", f"{cpu_off:.3f} / {cpu_on:.3f}",
         f"ms; {100.0 * (cpu_on / cpu_off - 1.0):+.1f} % (py-spy never stops the process)"),
        ("py-spy's own CPU while it records", f"{100.0 * spy_cpu / spy_wall:.1f} %",
         "of one core: what it takes from a box with no spare core"),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("dump", "overhead", "all"), default="all")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--window", type=float, default=5.0, help="seconds per overhead window")
    args = ap.parse_args()
    if args.part in ("dump", "all"):
        print_table("stacks dump over a warm SSH connection (loopback sshd)", "seconds",
                    dump_rows(args.rounds))
    if args.part in ("overhead", "all"):
        print_table(f"py-spy record's cost to the sampled loop ({args.rounds} windows of "
                    f"{args.window:g} s each way)", "value",
                    overhead_rows(args.rounds, args.window))


if __name__ == "__main__":
    main()
