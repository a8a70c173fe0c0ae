"""ncu CSV summary speed and memory (not collected by pytest).

    python -m tests.bench.bench_ncu [--mb 100] [--repeat 3]

Builds a ~100 MB Nsight Compute CSV by replicating the real H200 capture's
rows (tests/fixtures/ncu/moe-step-eager.csv) with fresh launch IDs — once
with the capture's own kernel names (long C++ templates, ~460 bytes a row)
and once with the names cut to 40 characters (~2.5x the rows per MB: the
per-row cost shows) — then, each in a fresh process in the same run:

- baseline: Python's ``csv`` module reading the same file (``csv.reader``,
  every row, nothing else);
- perftriage: ``ncu.summarize_file`` (the work behind ``perftriage kernels``).

Each runs ``--repeat`` times, alternated; the best time of each counts.
Prints time and peak RSS of both and the ratio (target: ≤ 2x the
baseline's time; memory bounded: RSS flat whatever the file size).
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.bench.table import print_table

FIXTURE = Path(__file__).parents[1] / "fixtures" / "ncu" / "moe-step-eager.csv"

BASELINE = (
    "import csv, resource, sys, time\n"
    "t = time.perf_counter()\n"
    "n = 0\n"
    "with open(sys.argv[1], newline='') as f:\n"
    "    for row in csv.reader(f): n += 1\n"
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, n)\n")

SUMMARY = (
    "import resource, sys, time\n"
    "from perftriage.core.profile.ncu import summarize_file\n"
    "t = time.perf_counter()\n"
    "s = summarize_file(sys.argv[1], peak_gbs=4800)\n"
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,\n"
    "      s.launches)\n")


def build(path: Path, mb: float, name_width: int | None) -> int:
    """Write a CSV of about ``mb`` MB; returns its launch count."""
    lines = FIXTURE.read_text().splitlines(keepends=True)
    at = next(i for i, x in enumerate(lines) if x.startswith('"ID"'))
    rows = list(csv.reader(lines[at + 1:]))
    launches = len({r[0] for r in rows})
    if name_width:
        for r in rows:
            r[4] = r[4][:name_width]
    n = 0
    with path.open("w", newline="") as out:
        out.writelines(lines[:at + 1])
        w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
        while out.tell() < mb * 1_000_000:
            base = n
            w.writerows([str(int(r[0]) + base), *r[1:]] for r in rows)
            n += launches
    return n


def measure(script: str, path: Path) -> tuple[float, float, int]:
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[0]), float(out[1]), int(out[2])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, width in (("fixture names", None), ("40-char names", 40)):
            path = Path(tmp) / "ncu.csv"
            launches = build(path, a.mb, width)
            size = path.stat().st_size / 1e6
            base, ours = [], []
            for _ in range(a.repeat):  # alternated, best of each: the box is shared
                base.append(measure(BASELINE, path))
                ours.append(measure(SUMMARY, path))
            bt, brss, nrows = min(base)
            st, srss, got = min(ours)
            assert got == launches, (got, launches)
            rows += [
                (f"{label}: csv.reader, every row ({size:.0f} MB, {nrows:,} rows)",
                 f"{bt:.2f}", f"RSS {brss:.0f} MiB"),
                (f"{label}: perftriage kernels ({launches:,} launches)", f"{st:.2f}",
                 f"RSS {srss:.0f} MiB; {st / bt:.2f}x the csv module (target ≤ 2x)"),
            ]
            path.unlink()
    print_table(f"ncu CSV summary, ~{a.mb:g} MB", "s", rows)


if __name__ == "__main__":
    main()
