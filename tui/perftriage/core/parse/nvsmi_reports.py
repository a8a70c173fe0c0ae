"""Parsers for nvidia-smi's one-shot reports: the default table view,
``topo -m`` (its header wrapped in ANSI codes even in a pipe), ``-q -x``
XML and ``-q`` text. Pure functions, no I/O. Tested on real H200
captures in ``tests/fixtures/nvidia-smi``."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

from perftriage.core.parse.gpu_sample import GpuProcess, GpuSample
from perftriage.core.parse.nvsmi_values import bandwidth_gbs, strip_ansi, to_float, to_int, to_str

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
