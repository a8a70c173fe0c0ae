"""The one nvidia-smi report perftriage reads whole: ``topo -m`` (its header
wrapped in ANSI codes even in a pipe), for the host detail view. Pure, no
I/O; tested on a real H200 capture in ``tests/fixtures/nvidia-smi``. (The
table view, ``-q`` and ``-q -x`` had parsers no caller used; they went: the
GPUs come from ``--query-gpu`` and NVML.)"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from perftriage.core.parse.nvsmi_values import strip_ansi

# --- topo -m -------------------------------------------------------------------


@dataclass
class Topology:
    columns: list[str]
    rows: list[tuple[str, list[str]]]  # (row label, cells)
    legend: list[str] = field(default_factory=list)

    @property
    def gpus(self) -> list[str]:
        return [label for label, _ in self.rows if label.startswith("GPU")]

    def link(self, a: str, b: str) -> str | None:
        try:
            col = self.columns.index(b)
        except ValueError:
            return None
        for label, cells in self.rows:
            if label == a and col < len(cells):
                return cells[col]
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"columns": self.columns, "rows": [[label, *cells] for label, cells in self.rows],
                "legend": self.legend}


def parse_topo(text: str) -> Topology | None:
    """``nvidia-smi topo -m`` -> matrix. The header row is wrapped in ANSI
    underline codes even when piped; those are stripped. Cells are
    tab-separated; ``None`` when no matrix is found."""
    lines = strip_ansi(text).splitlines()
    header_i = None
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.split("\t")]
        if line.startswith("\t") and cells[1:2] and cells[1].startswith("GPU"):
            header_i = i
            break
    if header_i is None:
        return None
    columns = [c.strip() for c in lines[header_i].split("\t")[1:]]
    rows = []
    i = header_i + 1
    while i < len(lines) and lines[i].strip():
        cells = [c.strip() for c in lines[i].split("\t")]
        body = cells[1:]
        if len(body) > len(columns):  # wide columns are padded with extra tabs
            body = [c for c in body if c][: len(columns)]
        rows.append((cells[0], body))
        i += 1
    legend = []
    for line in lines[i:]:
        m = re.match(r"^\s+(\S+)\s+=\s+(.*)$", line)
        if m:
            legend.append(f"{m.group(1)} = {m.group(2).strip()}")
    return Topology(columns, rows, legend)
