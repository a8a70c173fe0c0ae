"""Kernel-name classification speed (not collected by pytest).

    PYTHONPATH=tui:. python3 -m tests.bench.bench_buckets

A trace can hold thousands of distinct kernel names, each up to the 1024
characters the reader keeps (core/profile/reader.py). Each distinct name is
classified once; this measures that once, for 2,000 names: the built-in
table with Python's ``re`` (the baseline, what user rules use) against the
same table through RE2 (what the classifier runs), on kilobyte-long names
that match no rule (the worst case: every rule scans the whole name) and on
the real H200 fixtures' names.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

from perftriage.core.profile.buckets import BUILTIN_RULES, OTHER, Classifier
from perftriage.core.profile.summarize import summarize_files
from tests.bench.table import print_table

FIXTURES = Path(__file__).parents[1] / "fixtures" / "profile"


def per_name_us(make, names: list[str], repeats: int) -> float:
    """Mean µs per name; ``make()`` gives a fresh classify function (an empty
    cache), made before the clock starts."""
    fresh = [make() for _ in range(repeats)]
    t0 = time.perf_counter()
    for classify in fresh:
        for n in names:
            classify(n)
    return (time.perf_counter() - t0) / (len(names) * repeats) * 1e6


def main() -> None:
    rng = random.Random(7)
    long_names = ["".join(rng.choice("xyzqw_0123456789") for _ in range(1024)) for _ in range(2000)]
    real = sorted({k.name for f in FIXTURES.glob("*.trace.json.gz")
                   for k in summarize_files([f]).kernels})
    table = [(b, re.compile(p, re.IGNORECASE)) for b, p in BUILTIN_RULES]

    def by_re(name: str) -> str:
        return next((b for b, rx in table if rx.search(name)), OTHER)

    rows = []
    for label, names, repeats in (("1 KiB names matching no rule", long_names, 1),
                                  (f"the real H200 traces' {len(real)} names", real, 200)):
        base = per_name_us(lambda: by_re, names, repeats)
        fast = per_name_us(lambda: Classifier().bucket, names, repeats)
        rows.append((f"{label}: re (baseline)", f"{base:.1f}", ""))
        rows.append((f"{label}: RE2", f"{fast:.1f}", f"{base / fast:.1f}x faster"))
    print_table("Kernel-name classification, once per distinct name", "µs per name", rows)


if __name__ == "__main__":
    main()
