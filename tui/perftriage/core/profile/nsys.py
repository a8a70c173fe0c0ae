"""Nsight Systems' kernel summary: ``nsys stats --report cuda_gpu_kern_sum
--format csv`` (older releases: ``gpukernsum``).

Columns ``Time (%)``, ``Total Time (ns)``, ``Instances``, ``Avg (ns)``, ...,
``Name``. Lines before the header (nsys prints "Processing [...]" notes on
stdout) are skipped. A summary has no timeline, so no window, idle share or
exposed communication can come from it.

Rows are read one at a time from the (bounded) text; a total must be a time
(finite, not negative), ``Instances`` a whole count; a field over the csv
module's 128 KiB limit, a bad number or too many kernels is a
:class:`TraceError` naming the line.
"""

from __future__ import annotations

import csv
import io
import math
import re

from perftriage.core.profile.model import TraceError
from perftriage.core.profile.reader import MAX_KERNEL_NAMES, MAX_US, cut_name, too_many_kernels
from perftriage.core.profile.rank import RankData

_COUNT = re.compile(r"\d{1,15}")  # Instances: a whole number (below 10**15)
_LINE_PIECE = 1 << 18  # characters: twice the csv module's field limit


def _norm(col: str) -> str:
    return "".join(col.lower().split())


def looks_like(data: bytes | bytearray) -> bool:
    head = bytes(data[:4096]).decode("utf-8", "replace")
    return "Total Time" in head.replace("TotalTime", "Total Time") and "Name" in head


def _is_header(line: str) -> bool:
    return "Name" in line and "total" in line.lower() and "(ns)" in line


def _time_us(field: str) -> float:
    ns = float(field.replace(",", ""))
    if not (math.isfinite(ns) and 0 <= ns / 1000.0 <= MAX_US):
        raise ValueError("Total Time (ns) is not a time")
    return ns / 1000.0


def _count(field: str) -> int:
    text = field.replace(",", "").strip()
    if not _COUNT.fullmatch(text):
        raise ValueError("Instances is not a whole count")
    return int(text)


def read(path: str, data: bytes | bytearray, label: str) -> RankData:
    text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace", newline="")
    # a line is read in pieces of at most _LINE_PIECE characters: a 1 GiB line
    # is never one string (a row that long is over the csv field limit anyway)
    lines = iter(lambda: text.readline(_LINE_PIECE), "")
    start = 0
    for start, line in enumerate(lines, 1):
        if _is_header(line):
            break
    else:
        raise TraceError(path, "no cuda_gpu_kern_sum header (Total Time (ns) ... Name)")
    try:
        header = [_norm(c) for c in next(csv.reader([line]))]
        i_total, i_calls, i_name = (header.index("totaltime(ns)"), header.index("instances"),
                                    header.index("name"))
    except (ValueError, csv.Error):
        raise TraceError(path, f"unexpected nsys columns: {line[:200]}") from None
    kernels: dict[str, list[float]] = {}
    reader = csv.reader(lines)
    n = start
    try:
        for row in reader:
            n = start + reader.line_num
            if not row:
                continue
            try:
                total_us = _time_us(row[i_total])
                calls = _count(row[i_calls])
            except ValueError as exc:
                why = str(exc) if "is not" in str(exc) else "not a kernel summary row"
                raise TraceError(path, f"line {n}: {why}") from None
            except IndexError:
                raise TraceError(path, f"line {n}: not a kernel summary row") from None
            name = cut_name(row[i_name])
            acc = kernels.get(name)
            if acc is None:
                if len(kernels) >= MAX_KERNEL_NAMES:
                    raise too_many_kernels(path)
                acc = kernels[name] = [0.0, 0]
            acc[0] += total_us
            acc[1] += calls
    except csv.Error as exc:
        raise TraceError(path, f"line {start + reader.line_num}: {exc}") from None
    return RankData(file=path, label=label, kernels=kernels, devices=None)
