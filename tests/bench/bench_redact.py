"""Redaction cost per transcript batch: the RE2 gate that finds where any
trigger is and tests the rules only around those places, against the same
rules tested on the whole text (the baseline, measured in the same run).

Run: ``PYTHONPATH=tui python3 -m tests.bench.bench_redact``.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

from perftriage.core.model import events as ev
from perftriage.core.store.redact import Redactor
from tests.bench.table import print_table

LOGS = Path("/work/shared/fixtures/logs")
if not LOGS.exists():
    LOGS = Path(__file__).resolve().parent.parent / "fixtures" / "logs"


def _batch(names: list[str]) -> bytes:
    lines: list[str] = []
    for name in names:
        lines += (LOGS / name).read_text().splitlines()
    return ev.encode(ev.LogLines(source_id="l", lines=(lines * 200)[:200]))


def _per_call_us(redactor: Redactor, data: bytes, n: int = 2000) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        redactor.json_line(data)
    return (time.perf_counter() - t0) / n * 1e6


def main() -> None:
    gated = Redactor()
    whole = Redactor()
    no_gate = SimpleNamespace(absent_from=lambda text: False, spans=lambda text: None)
    whole._any = (no_gate, no_gate)
    rows = []
    for label, names in (("SGLang log, 200 lines", ["sglang-0.5.23-tp8.log"]),
                         ("SGLang + vLLM log, 200 lines",
                          ["sglang-0.5.23-tp8.log", "vllm-0.33.0.log"])):
        data = _batch(names)
        base, fast = _per_call_us(whole, data), _per_call_us(gated, data)
        rows.append((f"{label}: rules on the whole text (baseline)", f"{base:.0f}", ""))
        rows.append((f"{label}: RE2 gate, rules around the triggers", f"{fast:.0f}",
                     f"{base / fast:.1f}x faster"))
    print_table("Redaction of one encoded log batch", "us per batch", rows)


if __name__ == "__main__":
    main()
