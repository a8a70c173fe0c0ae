"""SSH transport benchmark: ``python -m tests.bench.bench_ssh [-n 50]``.

On loopback OpenSSH servers started here (tests/support/sshd.py), in one run:
perftriage ``run("true")`` on a warm host vs raw asyncssh ``conn.run("true")``
on one connection vs ``ssh host true`` through a warm ControlMaster vs a new
``ssh`` per command; 32 concurrent commands; a host whose shell start-up file
sleeps 0.2 s. Prints a Markdown table of medians (ms) and the targets.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import asyncssh

from tests.support.sshd import SshServer
from perftriage.transport.ssh import SSHTransport


async def _median_ms(fn, n: int) -> float:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        await fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


async def _interleaved_medians_ms(fns, n: int) -> list[float]:
    """Medians of several cases sampled in turn, so they share the machine's load."""
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(n):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            await fn()
            samples[i].append((time.perf_counter() - t0) * 1000)
    return [statistics.median(s) for s in samples]


def _sync_median_ms(argv: list[str], n: int) -> float:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


async def _ok(coro) -> None:
    r = await coro
    status = getattr(r, "exit_status", None)
    if status != 0:
        raise RuntimeError(f"command failed: {r}")


async def bench(n: int, n_slow: int) -> list[tuple[str, float, str]]:
    rows: list[tuple[str, float, str]] = []
    root = Path(tempfile.mkdtemp(prefix="bench_ssh_"))
    # HOME points at an empty directory so the login shell reads no ~/.bashrc
    # of this machine's user (pyenv init etc.): "clean" means no rc cost, and
    # the slow host's only start-up cost is the 0.2 s BASH_ENV file.
    home = root / "home"
    home.mkdir()
    clean = SshServer(root / "clean", env={"HOME": str(home)}).start()
    slow = SshServer(root / "slow", rc_sleep=0.2, env={"HOME": str(home)}).start()  # sleeps, then $HOME/.bashrc
    try:
        probe = subprocess.run([*clean.ssh_argv(), "echo $HOME"], capture_output=True, text=True)
        print(f"remote HOME: {probe.stdout.strip()}", flush=True)
        # perftriage, warm host
        t = SSHTransport("clean", clean.alias, ssh_config=clean.ssh_config)
        for _ in range(5):
            await _ok(t.run("true"))
        ts = SSHTransport("slow", slow.alias, ssh_config=slow.ssh_config)
        for _ in range(5):
            await _ok(ts.run("true"))
        # raw asyncssh, one connection
        conn = await asyncssh.connect(clean.alias, config=[str(clean.ssh_config)])
        for _ in range(3):
            await _ok(conn.run("true"))
        pt, raw, pt_slow = await _interleaved_medians_ms(
            [lambda: _ok(t.run("true")), lambda: _ok(conn.run("true")),
             lambda: _ok(ts.run("true"))], n)
        rows.append(("perftriage run('true'), warm host", pt, ""))
        rows.append(("raw asyncssh conn.run('true'), one connection", raw, ""))

        # OpenSSH with a warm ControlMaster
        cm = ["-o", "ControlMaster=auto", "-o", f"ControlPath={root}/cm-%C",
              "-o", "ControlPersist=120"]
        argv_cm = [*clean.ssh_argv(*cm), "true"]
        subprocess.run(argv_cm, check=True, capture_output=True)
        cmaster = _sync_median_ms(argv_cm, n)
        rows.append(("`ssh host true`, warm ControlMaster", cmaster, ""))
        subprocess.run([*clean.ssh_argv(*cm, "-O", "exit")], capture_output=True)

        # a new ssh per command
        argv_new = [*clean.ssh_argv("-o", "ControlMaster=no", "-o", "ControlPath=none"), "true"]
        fresh = _sync_median_ms(argv_new, max(30, n // 2))
        rows.append(("`ssh host true`, new connection each", fresh, ""))

        # 32 concurrent
        async def conc_pt() -> None:
            rs = await asyncio.gather(*(t.run("true") for _ in range(32)))
            if not all(r.exit_status == 0 for r in rs):
                raise RuntimeError("a concurrent perftriage run failed")

        conc = await _median_ms(conc_pt, max(30, n // 2))
        rows.append(("perftriage 32 concurrent run('true') (wall)", conc, "0 failures"))

        naive_conn = await asyncssh.connect(clean.alias, config=[str(clean.ssh_config)])
        naive = await asyncio.gather(*(naive_conn.run("true") for _ in range(32)),
                                     return_exceptions=True)
        failed = sum(isinstance(r, BaseException) for r in naive)
        naive_conn.close()
        sem = asyncio.Semaphore(8)

        refused = 0

        async def capped() -> None:  # cap + retry: sshd frees a session slot a bit late
            nonlocal refused
            async with sem:
                while True:
                    try:
                        await _ok(conn.run("true"))
                        return
                    except asyncssh.ChannelOpenError:
                        refused += 1
                        await asyncio.sleep(0.01)

        conc_raw = await _median_ms(lambda: asyncio.gather(*(capped() for _ in range(32))),
                                    max(30, n // 2))
        rows.append(("raw asyncssh 32 concurrent, capped at 8 channels + retry (wall)", conc_raw,
                     f"uncapped gather: {failed}/32 failed; capped: {refused} refused opens"))

        # slow rc host
        rows.append(("perftriage run('true'), host with 0.2 s rc file", pt_slow,
                     "sampled in turn with the two rows above"))
        conn_slow = await asyncssh.connect(slow.alias, config=[str(slow.ssh_config)])
        raw_slow = await _median_ms(lambda: _ok(conn_slow.run("true")), n_slow)
        rows.append(("raw asyncssh conn.run('true'), host with 0.2 s rc file", raw_slow,
                     f"median of {n_slow}"))

        targets = [
            ("perftriage / raw asyncssh", pt / raw, "<= 1.2"),
            ("ControlMaster / perftriage", cmaster / pt, ">= 2"),
            ("slow-rc host / clean host (perftriage)", pt_slow / pt, "<= 1.5"),
        ]
        conn.close()
        conn_slow.close()
        await t.close()
        await ts.close()
        return rows, targets
    finally:
        clean.stop()
        slow.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=50, help="samples per median (>= 30)")
    ap.add_argument("--n-slow", type=int, default=30,
                    help="samples for raw asyncssh on the slow-rc host (0.2 s each)")
    args = ap.parse_args()
    n = max(30, args.n)
    rows, targets = asyncio.run(bench(n, max(30, args.n_slow)))
    print(f"\nSSH transport, loopback OpenSSH, medians of >= {n} (ms)\n")
    print("| case | median ms | note |")
    print("|---|---:|---|")
    for name, ms, note in rows:
        print(f"| {name} | {ms:.2f} | {note} |")
    print("\n| ratio | value | target | met |")
    print("|---|---:|---|---|")
    for name, value, target in targets:
        op, bound = target.split()
        met = value <= float(bound) if op == "<=" else value >= float(bound)
        print(f"| {name} | {value:.2f} | {target} | {'yes' if met else 'NO'} |")


if __name__ == "__main__":
    main()
