"""Parsers for what ``nvidia-smi`` prints. Pure functions, no I/O, no Textual.

Covered forms (each tested on real H200 captures in ``tests/fixtures/nvidia-smi``):

- ``--query-gpu=<fields> --format=csv[,noheader][,nounits]`` — with or
  without the header line, with or without units (``"100 %"``,
  ``"31731 MiB"``): :func:`parse_query_csv`, :func:`parse_query_rows`;
- the streaming ``-lms N`` form of the same: :class:`QueryStream`;
- ``--query-compute-apps``: :func:`parse_compute_apps`;
- ``topo -m`` (its header wrapped in ANSI codes even in a pipe): :func:`parse_topo`.

``dmon`` has its own module, :mod:`perftriage.core.parse.dmon` (one parser).

Unsupported fields print ``[N/A]`` (or ``N/A``, ``[Not Supported]``...):
they become ``None`` and never raise. Memory is reported in MiB, power in
W, clocks in MHz, like nvidia-smi itself.

This module is the one import for callers; the value converters live in
:mod:`nvsmi_values`, ``topo -m`` in :mod:`nvsmi_reports`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from perftriage.core.parse.gpu_sample import GpuProcess, GpuSample
from perftriage.core.parse.nvsmi_reports import (  # noqa: F401 - the one import for callers
    Topology,
    parse_topo,
)
from perftriage.core.parse.nvsmi_values import (  # noqa: F401
    _FIELD_MAP,
    _NUM_RE,
    QUERY_FIELDS,
    bandwidth_gbs,
    canonical_field,
    is_na,
    split_csv_line,
    strip_ansi,
    to_float,
    to_int,
    to_str,
)


def _name_pos(fields: Sequence[str]) -> int | None:
    for i, f in enumerate(fields):
        if f in ("name", "process_name"):
            return i
    return None


def parse_query_rows(text: str | Iterable[str], fields: Sequence[str]) -> list[dict[str, Any]]:
    """Every data line as ``{canonical field: value}``; values converted only
    far enough to drop units and turn n/a into ``None`` (strings otherwise).
    A header line (if present) is skipped. Lines that do not have the right
    number of fields are skipped (an error message, a blank line)."""
    canon = [canonical_field(f) for f in fields]
    pos = _name_pos(canon)
    lines = text.splitlines() if isinstance(text, str) else text
    rows = []
    for line in lines:
        if not line.strip():
            continue
        parts = split_csv_line(line, len(canon), pos)
        if len(parts) != len(canon):
            continue
        if canonical_field(parts[0]) == canon[0] and [canonical_field(p) for p in parts] == canon:
            continue  # the header line
        rows.append({f: (None if is_na(v) else v) for f, v in zip(canon, parts, strict=True)})
    return rows


def row_to_gpu(row: dict[str, Any]) -> GpuSample | None:
    """One parsed row -> GpuSample (``None`` when it carries no usable index)."""
    index = to_int(row.get("index"))
    if index is None:
        return None
    g = GpuSample(index=index)
    for fname, raw in row.items():
        target = _FIELD_MAP.get(fname)
        if target is None or fname == "index":
            continue
        attr, kind = target
        if kind == "float":
            setattr(g, attr, to_float(raw))
        else:
            setattr(g, attr, to_str(raw) or ("" if attr in ("name", "uuid") else None))
    return g


def parse_query_line(line: str, fields: Sequence[str] = QUERY_FIELDS) -> GpuSample | None:
    """One line of ``--query-gpu`` output (any units); ``None`` if it is not one."""
    rows = parse_query_rows([line], fields)
    return row_to_gpu(rows[0]) if rows else None


def parse_query_csv(text: str, fields: Sequence[str] = QUERY_FIELDS) -> list[GpuSample]:
    """Output of ``nvidia-smi --query-gpu=<fields> --format=csv[,noheader][,nounits]``
    -> one :class:`GpuSample` per line. ``fields`` is what was asked for
    (``QUERY_FIELDS`` by default); a header line is skipped (it is no row)."""
    return [g for g in (row_to_gpu(r) for r in parse_query_rows(text, fields)) if g is not None]


def query_command(fields: Sequence[str] = QUERY_FIELDS, period_ms: int | None = None,
                  nounits: bool = True) -> str:
    """The ``nvidia-smi`` command line for ``fields`` (``-lms period`` streams)."""
    fmt = "csv,noheader,nounits" if nounits else "csv,noheader"
    cmd = f"nvidia-smi --query-gpu={','.join(fields)} --format={fmt}"
    if period_ms is not None:
        cmd += f" -lms {int(period_ms)}"
    return cmd


COMPUTE_APPS_FIELDS = ("gpu_uuid", "pid", "process_name", "used_memory")


def compute_apps_command() -> str:
    return (f"nvidia-smi --query-compute-apps={','.join(COMPUTE_APPS_FIELDS)}"
            " --format=csv,noheader,nounits")


def parse_compute_apps(text: str, fields: Sequence[str] = COMPUTE_APPS_FIELDS
                       ) -> list[tuple[str | None, GpuProcess]]:
    """``--query-compute-apps`` -> ``[(gpu_uuid or None, GpuProcess)]``."""
    out = []
    for row in parse_query_rows(text, fields):
        pid = to_int(row.get("pid"))
        if pid is None:
            continue
        used = row.get("used_memory", row.get("used_gpu_memory"))
        out.append((to_str(row.get("uuid")),
                    GpuProcess(pid=pid, name=to_str(row.get("process_name")) or "",
                               used_mib=to_float(used))))
    return out


# nvidia-smi names one field it does not know (older drivers, other GPUs) and
# prints no rows at all: ``Field "X" is not a valid field to query.``
_REFUSED_RE = re.compile(r'^Field ["\u201c](?P<field>[^"\u201d]+)["\u201d] is not a valid field to query')
# without these a row is no GPU sample: never dropped
REQUIRED_FIELDS = frozenset({"index"})


def refused_field(line: str) -> str | None:
    """The field named by nvidia-smi's "not a valid field" error, else None."""
    m = _REFUSED_RE.match(line.strip())
    return m.group("field") if m else None


class QueryFields:
    """The ``--query-gpu`` fields for one host: :data:`QUERY_FIELDS` minus
    those its nvidia-smi refused. One refused field blanks every GPU (no rows
    at all), so it is dropped and the query retried; the rest still show."""

    def __init__(self, fields: Sequence[str] = QUERY_FIELDS) -> None:
        self.fields: list[str] = list(fields)
        self.refused: list[str] = []

    def drop_refused(self, lines: Iterable[str]) -> str | None:
        """Drop the field ``lines`` say was refused; the name, or None when
        nothing (more) can be dropped (none named, already dropped, required)."""
        for line in lines:
            name = refused_field(line)
            if name is None:
                continue
            if name in self.fields and name not in REQUIRED_FIELDS:
                self.fields.remove(name)
                self.refused.append(name)
                return name
            return None
        return None

    @property
    def note(self) -> str | None:
        """What the pane says while fields are missing."""
        if not self.refused:
            return None
        return f"nvidia-smi refused {', '.join(self.refused)} (not a valid field here): not shown"


class QueryStream:
    """Groups the lines of ``--query-gpu ... -lms N`` into samples.

    nvidia-smi prints one line per GPU per period, GPUs in index order. A
    sample is complete when every GPU seen so far has reported (the count is
    learned from the first full round) or when an index repeats. Lines that
    are not samples (errors, blanks) are kept in ``last_error`` and never raise.
    """

    def __init__(self, fields: Sequence[str] = QUERY_FIELDS) -> None:
        self.fields = tuple(fields)
        self._pending: dict[int, GpuSample] = {}
        self.gpu_count: int | None = None
        self.last_error: str | None = None
        self.lines = 0

    def feed(self, lines: Iterable[str]) -> list[list[GpuSample]]:
        done: list[list[GpuSample]] = []
        for line in lines:
            if not line.strip():
                continue
            self.lines += 1
            g = parse_query_line(line, self.fields)
            if g is None:
                self.last_error = strip_ansi(line).strip()[:200]
                continue
            if g.index in self._pending:
                if self.gpu_count is None:
                    self.gpu_count = len(self._pending)
                done.append(self._take())
            self._pending[g.index] = g
            if self.gpu_count is not None and len(self._pending) >= self.gpu_count:
                done.append(self._take())
        return done

    def flush(self) -> list[GpuSample] | None:
        return self._take() if self._pending else None

    def _take(self) -> list[GpuSample]:
        batch = [self._pending[i] for i in sorted(self._pending)]
        self._pending = {}
        return batch


# --- NVML raw units ----------------------------------------------------------------

MIB = 1024 * 1024


def gpu_from_nvml(index: int, *, name: str = "", uuid: str = "",
                  util_gpu: float | None = None, util_mem: float | None = None,
                  mem_used_bytes: int | None = None, mem_total_bytes: int | None = None,
                  power_mw: float | None = None, power_limit_mw: float | None = None,
                  temp_c: float | None = None, sm_clock: float | None = None,
                  mem_clock: float | None = None, sm_clock_max: float | None = None,
                  mem_clock_max: float | None = None, pstate: int | None = None,
                  bus_width_bits: int | None = None, throttle: list[str] | None = None,
                  processes: list[tuple[int, str, int | None]] | None = None) -> GpuSample:
    """NVML's units (bytes, milliwatts, MHz) -> a GpuSample (MiB, W, MHz)."""

    def f(v):
        return float(v) if v is not None else None

    return GpuSample(
        index=index, name=name, uuid=uuid,
        util_pct=f(util_gpu), mem_util_pct=f(util_mem),
        mem_used_mib=mem_used_bytes / MIB if mem_used_bytes is not None else None,
        mem_total_mib=mem_total_bytes / MIB if mem_total_bytes is not None else None,
        power_w=power_mw / 1000.0 if power_mw is not None else None,
        power_limit_w=power_limit_mw / 1000.0 if power_limit_mw is not None else None,
        temp_c=f(temp_c), sm_clock_mhz=f(sm_clock), mem_clock_mhz=f(mem_clock),
        sm_clock_max_mhz=f(sm_clock_max), mem_clock_max_mhz=f(mem_clock_max),
        pstate=f"P{pstate}" if pstate is not None and 0 <= pstate < 32 else None,
        throttle=list(throttle or []),
        processes=[GpuProcess(pid=pid, name=pname,
                              used_mib=used / MIB if used is not None else None)
                   for pid, pname, used in (processes or [])],
        bus_width_bits=bus_width_bits,
        bandwidth_gbs=bandwidth_gbs(bus_width_bits, mem_clock_max),
    )


# NVML clock-event (throttle) reason bits -> short names
THROTTLE_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clocks_setting",
}


def throttle_names(mask: int | None) -> list[str]:
    if not mask:
        return []
    return [name for bit, name in THROTTLE_BITS.items() if mask & bit]
