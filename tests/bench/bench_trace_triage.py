"""`perftriage trace` and `perftriage triage` on a 4 MB trace, against a plain
`json` decode of the same file (issue 48; target: each under 2 s on the
2-core box). Not collected by pytest.

    python -m tests.bench.bench_trace_triage [--mb 4]

The trace is the real H200 eager fixture's events replicated to about 4 MB
(``bench_trace.build``), plain JSON; where the public corpus is laid out
(``shared/corpus``, tests/fixtures/corpus/README.md) its largest trace is
measured too. Each measure is a whole process, imports included, best of 3:

- baseline: ``python -c "json.load(open(FILE))"``;
- ``perftriage trace FILE --json`` (the summary, the gap split, the spanning ops);
- ``perftriage triage NAME --json`` on an investigation holding that trace as a
  capture (brought in once, beforehand, by ``trace FILE --session NAME``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from tests.bench.bench_compare import best, run
from tests.bench.bench_trace import build
from tests.bench.table import print_table

PY = sys.executable
CORPUS = Path(os.environ.get("PERFTRIAGE_CORPUS",  # as tests/core/test_corpus.py reads it
                              Path(__file__).parents[2] / "shared" / "corpus"))
LARGEST = "tracelens/mi300/google_owlv2-large-patch14-ensemble__1016001.json.gz"


def measure(path: Path, sessions: Path, name: str) -> list[tuple[str, str, str]]:
    size = path.stat().st_size / 1e6
    base = best([PY, "-c", "import json, gzip, sys; p = sys.argv[1]; "
                 "json.load(gzip.open(p) if p.endswith('.gz') else open(p))", str(path)])
    cli = [PY, "-m", "perftriage", "--sessions-dir", str(sessions)]
    trace = best([*cli, "trace", str(path), "--json"])
    run([*cli, "trace", str(path), "--session", name])
    triage = best([*cli, "triage", name, "--json"])
    rows = [(f"baseline: json decode of {path.name} ({size:.1f} MB on disk)", f"{base[0]:.2f}",
             f"CPU {base[1]:.2f} s, {base[2]:.0f} MiB")]
    for what, r in (("`trace --json`", trace), ("`triage --json` (the capture in an "
                                                "investigation)", triage)):
        rows.append((what, f"{r[0]:.2f}", f"{r[0] / base[0]:.2f}× baseline; CPU {r[1]:.2f} s, "
                                          f"{r[2]:.0f} MiB (target < 2 s)"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=4)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.trace.json"
        n = build(path, args.mb)
        rows = measure(path, Path(tmp) / "sessions", "bench4mb")
        rows[0] = (rows[0][0] + f", {n:,} events", *rows[0][1:])
        if (CORPUS / LARGEST).is_file():
            rows += measure(CORPUS / LARGEST, Path(tmp) / "sessions", "owlv2")
        print_table(f"trace and triage on a {args.mb} MB trace, whole process, best of 3",
                    "seconds", rows)


if __name__ == "__main__":
    main()
