"""Nsight Systems' kernel summary: ``nsys stats --report cuda_gpu_kern_sum
--format csv`` (older releases: ``gpukernsum``).

Columns ``Time (%)``, ``Total Time (ns)``, ``Instances``, ``Avg (ns)``, ...,
``Name``. Lines before the header (nsys prints "Processing [...]" notes on
stdout) are skipped. A summary has no timeline, so no window, idle share or
exposed communication can come from it.
"""

from __future__ import annotations

import csv
import io

from perftriage.core.profile.model import TraceError
from perftriage.core.profile.rank import RankData


def _norm(col: str) -> str:
    return "".join(col.lower().split())


def looks_like(data: bytes) -> bool:
    head = data[:4096].decode("utf-8", "replace")
    return "Total Time" in head.replace("TotalTime", "Total Time") and "Name" in head


def read(path: str, data: bytes, label: str) -> RankData:
    text = data.decode("utf-8", "replace")
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines)
                  if "Name" in ln and "total" in ln.lower() and "(ns)" in ln), None)
    if start is None:
        raise TraceError(path, "no cuda_gpu_kern_sum header (Total Time (ns) ... Name)")
    reader = csv.reader(io.StringIO("\n".join(lines[start:])))
    header = [_norm(c) for c in next(reader)]
    try:
        i_total, i_calls, i_name = (header.index("totaltime(ns)"), header.index("instances"),
                                    header.index("name"))
    except ValueError:
        raise TraceError(path, f"unexpected nsys columns: {lines[start][:200]}") from None
    kernels: dict[str, list[float]] = {}
    for n, row in enumerate(reader, start + 2):
        if not row:
            continue
        try:
            total_us = float(row[i_total].replace(",", "")) / 1000.0
            calls = int(float(row[i_calls].replace(",", "")))
            name = row[i_name]
        except (IndexError, ValueError):
            raise TraceError(path, f"line {n}: not a kernel summary row") from None
        acc = kernels.setdefault(name, [0.0, 0])
        acc[0] += total_us
        acc[1] += calls
    return RankData(file=path, label=label, kernels=kernels, devices=None)
