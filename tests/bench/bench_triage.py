"""`perftriage triage` on a 200k-event investigation (the whole recording,
every phase of every host) against `perftriage replay FILE --at end --json`
on the same file in the same run (target: triage <= 2 s on the 2-core box).

    python -m tests.bench.bench_triage [EVENTS]      (default 200,000)

The file is the replay benchmark's realistic transcript
(tests/bench/long_session.py). Each measure is a whole process (imports
included), best of 3 (tests/bench/bench_compare.py's ``best``).
"""

from __future__ import annotations

import json
import sys

from tests.bench.bench_compare import best
from tests.bench.long_session import bench_file
from tests.bench.table import print_table

PY = sys.executable


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    path, size = bench_file(n)
    cli = [PY, "-m", "perftriage"]
    r_wall, r_cpu, r_rss, out = best([*cli, "replay", str(path), "--at", "end", "--json"])
    duration = json.loads(out)["t"]
    t_wall, t_cpu, t_rss, out = best([*cli, "triage", str(path), "--json"])
    result = json.loads(out)
    findings = sum(len(p["findings"]) for p in result["phases"])
    rows = [
        (f"baseline: `replay --at end --json`, {n:,} events ({size:.0f} MiB, "
         f"{duration / 3600:.1f} h of session)", f"{r_wall:.2f}",
         f"CPU {r_cpu:.2f} s, {r_rss:.0f} MiB"),
        (f"`triage --json`: {len(result['phases'])} phases on {len(result['hosts'])} hosts, "
         f"{findings} findings", f"{t_wall:.2f}",
         f"{t_wall / r_wall:.2f}× baseline; CPU {t_cpu:.2f} s ({t_cpu / r_cpu:.2f}× baseline), "
         f"{t_rss:.0f} MiB (target <= 2 s)"),
    ]
    print_table("perftriage triage, whole process, best of 3", "seconds", rows)


if __name__ == "__main__":
    main()
