"""Parsers for what ``nvidia-smi`` prints. Pure functions, no I/O, no Textual.

Covered forms (each tested on real H200 captures in ``tests/fixtures/nvidia-smi``):

- ``--query-gpu=<fields> --format=csv[,noheader][,nounits]`` — with or
  without the header line, with or without units (``"100 %"``,
  ``"31731 MiB"``): :func:`parse_query_csv`, :func:`parse_query_rows`;
- the streaming ``-lms N`` form of the same: :class:`QueryStream`;
- ``--query-compute-apps``: :func:`parse_compute_apps`;
- the default table view: :func:`parse_table`;
- ``topo -m`` (its header wrapped in ANSI codes even in a pipe): :func:`parse_topo`;
- ``-q -x`` XML: :func:`parse_xml`;
- ``dmon`` lines: :func:`parse_dmon`.

Unsupported fields print ``[N/A]`` (or ``N/A``, ``[Not Supported]``...):
they become ``None`` and never raise. Memory is reported in MiB, power in
W, clocks in MHz, like nvidia-smi itself.
"""

from __future__ import annotations

import functools
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from perftriage.core.model.events import GpuProcess, GpuSample

# The fields the host sampler asks for, in this order. Stable: the probe
# kind ``nvsmi`` and the remote sampler both use it.
QUERY_FIELDS: tuple[str, ...] = (
    "index",
    "name",
    "uuid",
    "utilization.gpu",
    "utilization.memory",
    "memory.used",
    "memory.total",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "clocks.max.mem",
    "pstate",
)

# nvidia-smi field name (and its aliases) -> (GpuSample attribute, kind)
_ALIASES = {
    "clocks.current.sm": "clocks.sm",
    "clocks.current.memory": "clocks.mem",
    "clocks.current.graphics": "clocks.gr",
    "clocks.max.memory": "clocks.max.mem",
    "clocks.max.graphics": "clocks.max.gr",
    "clocks.max.sm": "clocks.max.sm",
    "gpu_uuid": "uuid",
    "gpu_name": "name",
    "power.draw.instant": "power.draw",
    "enforced.power.limit": "power.limit",
    "power.limit": "power.limit",
}

_FIELD_MAP: dict[str, tuple[str, str]] = {
    "index": ("index", "int"),
    "name": ("name", "str"),
    "uuid": ("uuid", "str"),
    "utilization.gpu": ("util_pct", "float"),
    "utilization.memory": ("mem_util_pct", "float"),
    "memory.used": ("mem_used_mib", "float"),
    "memory.total": ("mem_total_mib", "float"),
    "power.draw": ("power_w", "float"),
    "power.limit": ("power_limit_w", "float"),
    "temperature.gpu": ("temp_c", "float"),
    "clocks.sm": ("sm_clock_mhz", "float"),
    "clocks.mem": ("mem_clock_mhz", "float"),
    "clocks.max.sm": ("sm_clock_max_mhz", "float"),
    "clocks.max.mem": ("mem_clock_max_mhz", "float"),
    "pstate": ("pstate", "str"),
}

_NA_RE = re.compile(r"^\[?(n/?a|not supported|unknown error|insufficient permissions|"
                    r"gpu is lost|gpu requires reset|no data)\]?$", re.IGNORECASE)
_NUM_RE = re.compile(r"^[-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?")
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_UNIT_RE = re.compile(r"\s*\[[^\]]*\]\s*$")


def strip_ansi(text: str) -> str:
    return _ANSI_RE.sub("", text)


@functools.lru_cache(maxsize=512)
def canonical_field(name: str) -> str:
    """``"clocks.current.sm [MHz]"`` -> ``"clocks.sm"`` (header names, aliases)."""
    name = _UNIT_RE.sub("", name.strip()).strip().lower()
    return _ALIASES.get(name, name)


def is_na(value: str | None) -> bool:
    if value is None:
        return True
    value = value.strip()
    if not value:
        return True
    # fast path: a number is never n/a (nearly every streamed value)
    return not value[0].isdigit() and bool(_NA_RE.match(value))


def to_float(value: str | None) -> float | None:
    """``"223.56 W"`` / ``"223.56"`` -> 223.56; ``"[N/A]"`` -> None."""
    if is_na(value):
        return None
    m = _NUM_RE.match(value.strip())  # type: ignore[union-attr]
    return float(m.group(0)) if m else None


def to_int(value: str | None) -> int | None:
    f = to_float(value)
    return int(f) if f is not None else None


def to_str(value: str | None) -> str | None:
    return None if is_na(value) else value.strip()  # type: ignore[union-attr]


def bandwidth_gbs(bus_width_bits: int | None, mem_clock_max_mhz: float | None) -> float | None:
    """Peak memory bandwidth in GB/s: bus width / 8 x max memory clock x 2 (DDR).

    H200: 6016 bits x 3201 MHz -> 4814 GB/s (4.81 TB/s).
    """
    if not bus_width_bits or not mem_clock_max_mhz:
        return None
    return round(bus_width_bits / 8 * mem_clock_max_mhz * 2 / 1000.0, 1)


def split_csv_line(line: str, n_fields: int | None = None, name_pos: int | None = None) -> list[str]:
    """nvidia-smi separates CSV fields by ``", "``. A GPU or process name that
    itself holds ``", "`` makes too many parts: those are joined back into
    the name column (``name_pos``)."""
    parts = [p.strip() for p in line.rstrip("\r\n").split(", ")]
    if n_fields is not None and name_pos is not None and len(parts) > n_fields:
        extra = len(parts) - n_fields
        parts[name_pos : name_pos + extra + 1] = [", ".join(parts[name_pos : name_pos + extra + 1])]
    return parts


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
    (``QUERY_FIELDS`` by default); with a header line present, pass
    ``fields=None``-free :func:`parse_query_csv_with_header` instead."""
    return [g for g in (row_to_gpu(r) for r in parse_query_rows(text, fields)) if g is not None]


def query_command(fields: Sequence[str] = QUERY_FIELDS, period_ms: int | None = None,
                  nounits: bool = True) -> str:
    """The ``nvidia-smi`` command line for ``fields`` (``-lms period`` streams)."""
    fmt = "csv,noheader,nounits" if nounits else "csv,noheader"
    cmd = f"nvidia-smi --query-gpu={','.join(fields)} --format={fmt}"
    if period_ms is not None:
        cmd += f" -lms {int(period_ms)}"
    return cmd


@dataclass
class CsvSection:
    fields: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)


def parse_csv_sections(text: str) -> list[CsvSection]:
    """CSV output *with* header lines, possibly several queries concatenated
    (``--query-gpu`` then ``--query-compute-apps``): one section per header.
    Lines starting with ``#`` (dmon) end a section and are ignored here."""
    sections: list[CsvSection] = []
    current: CsvSection | None = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            if line.lstrip().startswith("#"):
                current = None
            continue
        if current is not None:
            rows = parse_query_rows([line], current.fields)
            if rows:
                current.rows.extend(rows)
                continue
        # a header: every part looks like a field name, none is a number
        parts = split_csv_line(line)
        if all(re.match(r"^[a-z_][\w.]*(\s*\[[^\]]*\])?$", p.strip(), re.I) for p in parts) and \
                not any(_NUM_RE.match(p) for p in parts):
            current = CsvSection([canonical_field(p) for p in parts])
            sections.append(current)
        else:
            current = None
    return sections


def parse_query_csv_with_header(text: str) -> list[GpuSample]:
    """``--format=csv`` output with its header line (units or not)."""
    gpus = []
    for sec in parse_csv_sections(text):
        if "index" in sec.fields or "uuid" in sec.fields:
            gpus.extend(g for g in (row_to_gpu(r) for r in sec.rows) if g is not None)
    return gpus


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


# --- table view ----------------------------------------------------------------

_TABLE_GPU1 = re.compile(r"^\|\s+(\d+)\s+(.+?)\s+(On|Off)\s+\|\s+(\S+)\s+(\S+)\s+\|\s*(.*?)\s*\|$")
_TABLE_GPU2 = re.compile(
    r"^\|\s*(\S+)\s+(\S+)\s+(P\d+|\S+)\s+(\S+?)\s*/\s*(\S+)\s+\|\s+(\S+?)\s*/\s*(\S+)\s+\|"
    r"\s+(\S+)\s+(\S+)\s*\|$"
)
_TABLE_PROC = re.compile(r"^\|\s+(\d+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(.+?)\s+(\S+)\s*\|$")
_TABLE_HEAD = re.compile(r"Driver Version:\s*(\S+)\s+CUDA Version:\s*(\S+)")


def parse_table(text: str) -> dict[str, Any]:
    """The default ``nvidia-smi`` table -> ``{"driver", "cuda", "gpus", "processes"}``
    (``processes`` maps GPU index to its process list)."""
    out: dict[str, Any] = {"driver": None, "cuda": None, "gpus": [], "processes": {}}
    lines = strip_ansi(text).splitlines()
    in_procs = False
    pending: GpuSample | None = None
    for line in lines:
        line = line.rstrip()
        if m := _TABLE_HEAD.search(line):
            out["driver"], out["cuda"] = m.group(1), m.group(2)
            continue
        if "Processes:" in line:
            in_procs = True
            continue
        if in_procs:
            if m := _TABLE_PROC.match(line):
                idx = int(m.group(1))
                out["processes"].setdefault(idx, []).append(
                    GpuProcess(pid=int(m.group(4)), name=m.group(6).strip(),
                               used_mib=to_float(m.group(7))))
            continue
        if m := _TABLE_GPU1.match(line):
            pending = GpuSample(index=int(m.group(1)), name=m.group(2).strip())
            continue
        if pending is not None and (m := _TABLE_GPU2.match(line)):
            pending.temp_c = to_float(m.group(2))
            pending.pstate = to_str(m.group(3))
            pending.power_w = to_float(m.group(4))
            pending.power_limit_w = to_float(m.group(5))
            pending.mem_used_mib = to_float(m.group(6))
            pending.mem_total_mib = to_float(m.group(7))
            pending.util_pct = to_float(m.group(8))
            out["gpus"].append(pending)
            pending = None
    for idx, procs in out["processes"].items():
        for g in out["gpus"]:
            if g.index == idx:
                g.processes = procs
    return out


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


# --- -q -x XML -------------------------------------------------------------------


def _x(el: ET.Element | None, path: str) -> str | None:
    if el is None:
        return None
    found = el.find(path)
    return found.text.strip() if found is not None and found.text is not None else None


def _first(values):
    return next((v for v in values if v is not None), None)


def parse_xml(text: str) -> dict[str, Any]:
    """``nvidia-smi -q -x`` -> ``{"driver", "cuda", "gpus": [GpuSample...]}``
    with processes, max clocks, P-state, active clock-event (throttle)
    reasons, and bus width / bandwidth where the XML carries them."""
    root = ET.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", text, count=1))
    out: dict[str, Any] = {"driver": _x(root, "driver_version"),
                           "cuda": _x(root, "cuda_version"), "gpus": []}
    for i, g_el in enumerate(root.findall("gpu")):
        idx = to_int(_x(g_el, "minor_number"))
        g = GpuSample(index=idx if idx is not None else i)
        g.name = _x(g_el, "product_name") or ""
        g.uuid = _x(g_el, "uuid") or ""
        g.util_pct = to_float(_x(g_el, "utilization/gpu_util"))
        g.mem_util_pct = to_float(_x(g_el, "utilization/memory_util"))
        g.mem_used_mib = to_float(_x(g_el, "fb_memory_usage/used"))
        g.mem_total_mib = to_float(_x(g_el, "fb_memory_usage/total"))
        power = g_el.find("gpu_power_readings")
        if power is None:
            power = g_el.find("power_readings")
        g.power_w = _first(to_float(_x(power, p)) for p in
                           ("instant_power_draw", "power_draw", "average_power_draw"))
        g.power_limit_w = _first(to_float(_x(power, p)) for p in
                                 ("current_power_limit", "enforced_power_limit"))
        g.temp_c = to_float(_x(g_el, "temperature/gpu_temp"))
        g.sm_clock_mhz = to_float(_x(g_el, "clocks/sm_clock"))
        g.mem_clock_mhz = to_float(_x(g_el, "clocks/mem_clock"))
        g.sm_clock_max_mhz = to_float(_x(g_el, "max_clocks/sm_clock"))
        g.mem_clock_max_mhz = to_float(_x(g_el, "max_clocks/mem_clock"))
        g.pstate = to_str(_x(g_el, "performance_state"))
        reasons = g_el.find("clocks_event_reasons")
        if reasons is None:
            reasons = g_el.find("clocks_throttle_reasons")
        if reasons is not None:
            g.throttle = [
                re.sub(r"^clocks_(event|throttle)_reason_", "", r.tag)
                for r in reasons
                if (r.text or "").strip() == "Active"
            ]
        width = _first(to_int(_x(g_el, p)) for p in
                       ("fb_memory_usage/bus_width", "memory_bus_width", "memory_bus_width_bits"))
        g.bus_width_bits = width
        g.bandwidth_gbs = bandwidth_gbs(width, g.mem_clock_max_mhz)
        procs = []
        for p in g_el.findall("processes/process_info"):
            pid = to_int(_x(p, "pid"))
            if pid is not None:
                procs.append(GpuProcess(pid=pid, name=_x(p, "process_name") or "",
                                        used_mib=to_float(_x(p, "used_memory"))))
        g.processes = procs
        out["gpus"].append(g)
    return out


# --- -q (text) ----------------------------------------------------------------------


def parse_q_tree(text: str) -> list[tuple[str, dict[str, Any]]]:
    """``nvidia-smi -q`` -> ``[(bus id, tree)]``; a tree maps section and key
    names to nested dicts or string values (the first value wins)."""
    gpus: list[tuple[str, dict[str, Any]]] = []
    stack: list[tuple[int, dict[str, Any]]] = []
    for raw in strip_ansi(text).splitlines():
        if not raw.strip() or raw.startswith("="):
            continue
        if raw.startswith("GPU "):
            tree: dict[str, Any] = {}
            gpus.append((raw[4:].strip(), tree))
            stack = [(0, tree)]
            continue
        if not stack:
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if " : " in raw or raw.rstrip().endswith(":"):
            key, _, value = raw.partition(":")
            parent.setdefault(key.strip(), value.strip())
        else:
            child: dict[str, Any] = {}
            parent.setdefault(raw.strip(), child)
            stack.append((indent, child))
    return gpus


def _q(tree: dict[str, Any], *path: str) -> str | None:
    node: Any = tree
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node if isinstance(node, str) else None


def parse_q_text(text: str) -> list[GpuSample]:
    """``nvidia-smi -q`` (text) -> one GpuSample per GPU."""
    out = []
    for i, (_bus, t) in enumerate(parse_q_tree(text)):
        idx = to_int(_q(t, "Minor Number"))
        g = GpuSample(index=idx if idx is not None else i)
        g.name = _q(t, "Product Name") or ""
        g.uuid = _q(t, "GPU UUID") or ""
        g.util_pct = to_float(_q(t, "Utilization", "GPU"))
        g.mem_util_pct = to_float(_q(t, "Utilization", "Memory"))
        g.mem_used_mib = to_float(_q(t, "FB Memory Usage", "Used"))
        g.mem_total_mib = to_float(_q(t, "FB Memory Usage", "Total"))
        g.power_w = _first(to_float(_q(t, "GPU Power Readings", k)) for k in
                           ("Instantaneous Power Draw", "Power Draw", "Average Power Draw"))
        g.power_limit_w = to_float(_q(t, "GPU Power Readings", "Current Power Limit"))
        g.temp_c = to_float(_q(t, "Temperature", "GPU Current Temp"))
        g.sm_clock_mhz = to_float(_q(t, "Clocks", "SM"))
        g.mem_clock_mhz = to_float(_q(t, "Clocks", "Memory"))
        g.sm_clock_max_mhz = to_float(_q(t, "Max Clocks", "SM"))
        g.mem_clock_max_mhz = to_float(_q(t, "Max Clocks", "Memory"))
        g.pstate = to_str(_q(t, "Performance State"))
        reasons = t.get("Clocks Event Reasons") or t.get("Clocks Throttle Reasons") or {}
        active = []

        def walk(d: dict[str, Any]) -> None:
            for k, v in d.items():
                if isinstance(v, dict):
                    walk(v)
                elif v == "Active":
                    active.append(k)

        if isinstance(reasons, dict):
            walk(reasons)
        g.throttle = active
        out.append(g)
    return out


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


# --- dmon --------------------------------------------------------------------------


def parse_dmon(text: str) -> list[dict[str, float | None]]:
    """``nvidia-smi dmon`` lines -> one dict per data line keyed by the
    ``# gpu pwr ...`` header (values as floats, ``-`` -> None)."""
    cols: list[str] | None = None
    out = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            names = s.lstrip("#").split()
            if names and names[0].lower() == "gpu":
                cols = names
            continue
        if cols is None or not s:
            continue
        parts = s.split()
        if len(parts) != len(cols) or not parts[0].isdigit():
            continue
        out.append({c: (None if v == "-" else to_float(v)) for c, v in zip(cols, parts, strict=True)})
    return out
