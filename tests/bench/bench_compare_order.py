"""`perftriage compare` on readings out of time order (issue 42, item 9):
the same N live-gap samples written in ascending and in descending time,
compared in the same run (a descending file was quadratic: each reading
inserted at the front of its series).

    python -m tests.bench.bench_compare_order [SAMPLES] [RUNS]   (600,000; best of 1)

Each measure is a whole process (imports included): wall time, CPU time and
max RSS from wait4. The two outputs must agree (the order is the file's, not
the readings').
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.bench.bench_compare import run
from tests.bench.table import print_table

PY = sys.executable
HEADER = '{"format":"perftriage-session","version":1,"started_at":"","hosts":["h"]}'


def write(path: Path, n: int, descending: bool) -> None:
    order = range(n - 1, -1, -1) if descending else range(n)
    with path.open("w") as fh:
        fh.write(HEADER + "\n")
        for i in order:
            t = i * 0.1  # ten samples a second
            level = 2.0 if i < n // 2 else 1.5  # a phase change half-way
            wobble = (i * 7919) % 13 / 100.0
            fh.write(json.dumps({
                "type": "gap.sample", "host": "h", "floor_ms": 8.3, "measured_ms": 8.3 * level,
                "gap": level + wobble, "dram_bw_gbs": 4000 / level + wobble,
                "idle_pct": 10 * level + wobble, "t": round(t, 3)}) + "\n")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 600_000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    base = Path(os.environ.get("PERFTRIAGE_BENCH_DIR", "/tmp/perftriage-bench")) / "compare-order"
    base.mkdir(parents=True, exist_ok=True)
    duration = n * 0.1
    q = duration / 4
    rows, outputs = [], {}
    for name, descending in (("ascending", False), ("descending", True)):
        path = base / f"{name}-{n}.jsonl"
        if not path.exists():
            write(path, n, descending)
        argv = [PY, "-m", "perftriage", "compare", f"{path}@0-{q:.0f}", f"{path}@{3 * q:.0f}-",
                "--json"]
        wall, cpu, rss, out = min((run(argv) for _ in range(runs)), key=lambda r: r[0])
        result = json.loads(out)
        outputs[name] = [(m["metric"], m["a"], m["b"], m["verdict"]) for m in result["metrics"]]
        rows.append((f"`compare` first vs last quarter, {n:,} samples in {name} time",
                     f"{wall:.2f}", f"CPU {cpu:.2f} s, {rss:.0f} MiB, "
                     f"{len(result['metrics'])} metrics"))
    asc, desc = float(rows[0][1]), float(rows[1][1])
    rows.append(("descending ÷ ascending", f"{desc / asc:.2f}×",
                 "same verdicts" if outputs["ascending"] == outputs["descending"]
                 else "VERDICTS DIFFER"))
    print_table(f"perftriage compare, readings out of time order, best of {runs}",
                "seconds", rows)


if __name__ == "__main__":
    main()
