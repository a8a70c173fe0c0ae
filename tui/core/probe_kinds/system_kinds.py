"""``which``, ``nvsmi`` and ``shell``."""

from __future__ import annotations

import importlib
import shlex
from typing import Any

from tui.core.probes import (
    SCRIPT_PRELUDE,
    ProbeKind,
    Verdict,
    exit_verdict,
    no_result,
    python_command,
    register,
    script_result,
)

# --- which NAME... ----------------------------------------------------------

WHICH_SCRIPT = SCRIPT_PRELUDE + r"""
import shutil
paths = {name: shutil.which(name) for name in sys.argv[1:]}
missing = [n for n, p in paths.items() if p is None]
_emit({"paths": paths, "missing": missing}, 1 if missing else 0)
"""


def _which_verdict(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    data = script_result(out)
    if data is None:
        return no_result(status, err)
    paths: dict[str, str | None] = data.get("paths", {})
    parts = [f"{k}: {v}" if v else f"{k}: NOT FOUND" for k, v in paths.items()]
    return Verdict("failed" if data.get("missing") else "ok", ", ".join(parts), data)


register(
    ProbeKind(
        name="which",
        usage="which NAME...",
        help="executables on the host's PATH (e.g. is nsys there?)",
        min_args=1,
        max_args=None,
        build=lambda args, ctx: python_command(ctx, WHICH_SCRIPT, args),
        interpret=_which_verdict,
        compare=lambda s, summ, d: d.get("paths"),
    )
)

# --- nvsmi ----------------------------------------------------------------------
# The CSV parser is shared with the hosts pane (tui/core/nvsmi.py, owned by
# the hosts feature). Until that module exists, a minimal split of the same
# query is used here: not a second parser, just enough to show a table.

NVSMI_FIELDS = (
    "index,name,uuid,utilization.gpu,utilization.memory,memory.used,memory.total,"
    "power.draw,power.limit,temperature.gpu,clocks.sm,clocks.max.sm,clocks.mem,"
    "clocks.max.mem,pstate"
)
_MINIMAL_KEYS = (
    "index", "name", "uuid", "util_pct", "mem_util_pct", "mem_used_mib", "mem_total_mib",
    "power_w", "power_limit_w", "temp_c", "sm_clock_mhz", "sm_clock_max_mhz",
    "mem_clock_mhz", "mem_clock_max_mhz", "pstate",
)


def _shared_parser():
    """(query fields, parse function) from tui.core.nvsmi when it exists."""
    try:
        mod = importlib.import_module("tui.core.nvsmi")
    except ImportError:
        return None
    fields = getattr(mod, "QUERY_FIELDS", None) or getattr(mod, "QUERY_GPU_FIELDS", None)
    parse = getattr(mod, "parse_query_csv", None) or getattr(mod, "parse_query", None) \
        or getattr(mod, "parse_csv", None)
    if not (fields and parse):
        return None
    if not isinstance(fields, str):
        fields = ",".join(fields)
    return fields, parse


def _nvsmi_build(args: list[str], ctx) -> str:
    shared = _shared_parser()
    fields = shared[0] if shared else NVSMI_FIELDS
    return "nvidia-smi " + shlex.join([f"--query-gpu={fields}",
                                       "--format=csv,noheader,nounits"])


def _minimal_rows(out: str) -> list[dict[str, Any]]:
    rows = []
    for line in out.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(", ")]
        row: dict[str, Any] = {}
        for key, cell in zip(_MINIMAL_KEYS, cells, strict=False):
            if cell in ("[N/A]", "N/A", "[Not Supported]", ""):
                row[key] = None
                continue
            try:
                row[key] = int(cell) if key == "index" else (
                    cell if key in ("name", "uuid", "pstate") else float(cell))
            except ValueError:
                row[key] = cell
        rows.append(row)
    return rows


def _as_dict(gpu: Any) -> dict[str, Any]:
    if isinstance(gpu, dict):
        return gpu
    try:
        import msgspec  # noqa: PLC0415

        return msgspec.to_builtins(gpu)
    except (ImportError, TypeError):
        return dict(vars(gpu))


def _nvsmi_verdict(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    if status == 127:
        return Verdict("failed", "nvidia-smi not found on the host", {"exit_status": status})
    if status != 0:
        last = (err.strip() or out.strip()).splitlines()
        return Verdict("failed", f"nvidia-smi exit {status}" + (f": {last[-1]}" if last else ""),
                       {"exit_status": status})
    shared = _shared_parser()
    if shared:
        gpus = [_as_dict(g) for g in shared[1](out)]
        parser = "tui.core.nvsmi"
    else:
        gpus, parser = _minimal_rows(out), "minimal"
    if not gpus:
        return Verdict("failed", "nvidia-smi listed no GPUs", {"gpus": [], "parser": parser})
    names = sorted({str(g.get("name")) for g in gpus})
    util = [g.get("util_pct") for g in gpus]
    mem = [g.get("mem_used_mib") for g in gpus]
    summary = (f"{len(gpus)} GPU ({', '.join(names)}); util "
               + "/".join("?" if u is None else f"{u:.0f}%" for u in util)
               + "; mem " + "/".join("?" if m is None else f"{m / 1024:.0f}G" for m in mem))
    return Verdict("ok", summary, {"gpus": gpus, "parser": parser})


register(
    ProbeKind(
        name="nvsmi",
        usage="nvsmi",
        help="nvidia-smi --query-gpu, one row per GPU",
        min_args=0,
        max_args=0,
        build=_nvsmi_build,
        interpret=_nvsmi_verdict,
        compare=lambda s, summ, d: [(g.get("name"), g.get("mem_total_mib"))
                                    for g in d.get("gpus", [])],
    )
)

# --- shell COMMAND ---------------------------------------------------------------


def _shell_compare(status: str, summary: str, d: dict[str, Any]) -> Any:
    return [d.get("exit_status"), summary]


register(
    ProbeKind(
        name="shell",
        usage="shell COMMAND",
        help="raw shell command: runs AS SHELL, nothing is quoted",
        min_args=1,
        max_args=None,
        build=lambda args, ctx: " ".join(args),
        interpret=exit_verdict,
        parse_line=lambda line: [line] if line.strip() else [],
        compare=_shell_compare,
    )
)

