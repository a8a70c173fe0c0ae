"""A benchmark's result as a Markdown table, headed by the machine's load
(figures on a shared 2-CPU box mean little without it)."""

from __future__ import annotations

import os


def print_table(title: str, unit: str, rows: list[tuple[str, str, str]]) -> None:
    print(f"\n{title} ({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f})\n")
    print(f"| case | {unit} | notes |\n|---|---:|---|")
    for case, value, notes in rows:
        print(f"| {case} | {value} | {notes} |")
