"""Fan-out benchmark: ``python -m tests.bench.bench_fanout [-n 64] [--repeat 5]``.

64 hosts = 64 ``Host`` aliases of one loopback OpenSSH sshd (tests/support/sshd.py,
``MaxStartups 100:30:200``). In one run, through perftriage's ProbeRunner
(the same one `perftriage probe --all --group` uses, window 64):

- one host, warm (its connection and shell already up): the baseline;
- N hosts cold (N new SSH connections, through the window);
- N hosts warm (median of --repeat);
- the whole command, `perftriage -H node[01-64] probe --all --group`, cold,
  as a new process (Python start-up included).

Targets: 0 failures; cold <= 10 s; warm <= 2 x one host + 0.5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.table import print_table
from tests.support.ssh_aliases import write_aliases
from tests.support.sshd import SshServer
from perftriage.core.fleet.fold import group_answers
from perftriage.core.store.config import load
from perftriage.services.hosts.registry import resolve_hosts
from perftriage.services.probes.runner import ProbeRunner
from perftriage.services.investigation.session import Session
from perftriage.transport.ssh_options import SshOptions

COMMAND = ["shell", "echo fanout-ok"]


async def _fan_out(runner: ProbeRunner, session: Session, names: list[str]) -> tuple[float, int, int]:
    """(wall seconds, failures, answer groups) for one probe on ``names``."""
    t0 = time.perf_counter()
    ids = (runner.enqueue_all(COMMAND[0], COMMAND[1:], hosts=names) if len(names) > 1
           else [runner.enqueue(names[0], COMMAND[0], COMMAND[1:])])
    await runner.wait(ids)
    wall = time.perf_counter() - t0
    results = [session.state.probes[i] for i in ids]
    return wall, sum(p.status != "ok" for p in results), len(group_answers(results))


async def bench(n: int, repeat: int, root: Path) -> list[tuple[str, str, str]]:
    home = root / "home"
    home.mkdir()
    server = SshServer(root / "sshd", env={"HOME": str(home)}).start()
    rows: list[tuple[str, str, str]] = []
    try:
        ssh_config, config_path, names = write_aliases(server, n, root)
        config = load(config_path)
        # one host, warm: the baseline
        reg1 = resolve_hosts(config, [names[0]], ssh=SshOptions(config=ssh_config))
        s1 = Session(name="one", hosts=reg1.names)
        r1 = ProbeRunner(s1, reg1)
        one_cold, fail1, _ = await _fan_out(r1, s1, reg1.names)
        one = statistics.median([(await _fan_out(r1, s1, reg1.names))[0]
                                 for _ in range(max(repeat, 5))])
        rows.append(("one host, cold (1 new connection)", f"{one_cold:.3f}", f"{fail1} failures"))
        rows.append(("one host, warm (baseline)", f"{one:.3f}", ""))
        await r1.close()
        await reg1.close()
        # n hosts
        reg = resolve_hosts(config, names, ssh=SshOptions(config=ssh_config))
        session = Session(name="fanout", hosts=reg.names)
        runner = ProbeRunner(session, reg)
        cold, fails, groups = await _fan_out(runner, session, reg.names)
        rows.append((f"{n} hosts, cold ({n} new connections, window 64)", f"{cold:.3f}",
                     f"{fails} failures, {groups} answer group(s); target <= 10 s"))
        warm_runs = [await _fan_out(runner, session, reg.names) for _ in range(repeat)]
        warm = statistics.median(w for w, _, _ in warm_runs)
        warm_fails = sum(f for _, f, _ in warm_runs)
        rows.append((f"{n} hosts, warm (median of {repeat})", f"{warm:.3f}",
                     f"{warm_fails} failures; target <= 2 x {one:.3f} + 0.5 = {2 * one + 0.5:.3f}"))
        await runner.close()
        await reg.close()
        # the command, as a user runs it
        env = {**os.environ, "PERFTRIAGE_SESSIONS_DIR": str(root / "sessions")}
        argv = [str(Path(sys.executable).with_name("perftriage")), "--config", str(config_path),
                "--ssh-config", str(ssh_config), "-H", f"node[{names[0][4:]}-{names[-1][4:]}]",
                "probe", "--all", "--group", *COMMAND]
        t0 = time.perf_counter()
        proc = subprocess.run(argv, capture_output=True, text=True, env=env)
        cli = time.perf_counter() - t0
        head = proc.stdout.splitlines()[1] if proc.stdout.count("\n") > 1 else proc.stderr[-200:]
        rows.append((f"`perftriage probe --all --group` on {n} hosts, new process",
                     f"{cli:.3f}", f"exit {proc.returncode}: {head}"))
    finally:
        server.stop()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_fanout_") as tmp:
        rows = asyncio.run(bench(args.n, args.repeat, Path(tmp)))
    print_table(f"fan-out on {args.n} aliases of one loopback sshd", "seconds", rows)


if __name__ == "__main__":
    main()
