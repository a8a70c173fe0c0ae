"""`perftriage compare` on a 200k-event investigation: two slices of one
file (its first and last quarter), against `perftriage replay FILE --at T
--json` on the same file in the same run (target: compare <= 2 s).

    python -m tests.bench.bench_compare [EVENTS]      (default 200,000)

The file is the replay benchmark's realistic transcript
(tests/bench/long_session.py: an 8-GPU host and localhost at 1 Hz, decode-line
batches twice a second, probes, notes, hypotheses). Each measure is a whole
process (imports included, from bytecode as an installed package has it),
best of 3: wall time, CPU time and max RSS from wait4 (on a shared, loaded
box the CPU time is the steadier figure).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from tests.bench.long_session import bench_file
from tests.bench.table import print_table

PY = sys.executable


# bytecode as an installed package has it (pip compiles it at install): written
# once under the bench's own folder, read by the runs after the first. Without
# this, a shell with PYTHONDONTWRITEBYTECODE=1 (this dev box's) compiles every
# module again in every run (~0.1 s of a 2 s triage)
BYTECODE_ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
                "PYTHONPYCACHEPREFIX": "/tmp/perftriage-bench/pycache"}


def run(argv: list[str]) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds, max RSS MiB, stdout of one process."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=BYTECODE_ENV)
    out = proc.stdout.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[:4]} failed: {out.decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.decode()


def best(argv: list[str]) -> tuple[float, float, float, str]:
    runs = [run(argv) for _ in range(3)]
    return min(runs, key=lambda r: r[0])


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    path, size = bench_file(n)
    cli = [PY, "-m", "perftriage"]
    replay_wall, replay_cpu, replay_rss, out = best([*cli, "replay", str(path), "--at", "end", "--json"])
    duration = json.loads(out)["t"]
    q = duration / 4
    a, b = f"{path}@0-{q:.0f}", f"{path}@{3 * q:.0f}-"
    cmp_wall, cmp_cpu, cmp_rss, out = best([*cli, "compare", a, b, "--json"])
    result = json.loads(out)
    rows = [
        (f"baseline: `replay --at end --json`, {n:,} events ({size:.0f} MiB, "
         f"{duration / 3600:.1f} h of session)", f"{replay_wall:.2f}",
         f"CPU {replay_cpu:.2f} s, {replay_rss:.0f} MiB"),
        (f"`compare` first vs last quarter: {len(result['metrics'])} metrics",
         f"{cmp_wall:.2f}",
         f"{cmp_wall / replay_wall:.2f}× baseline; CPU {cmp_cpu:.2f} s "
         f"({cmp_cpu / replay_cpu:.2f}× baseline), {cmp_rss:.0f} MiB (target <= 2 s)"),
    ]
    print_table("perftriage compare, whole process, best of 3", "seconds", rows)


if __name__ == "__main__":
    main()
