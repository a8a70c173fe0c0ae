"""``which``, ``nvsmi`` and ``shell``."""

from __future__ import annotations

from typing import Any

import msgspec

from perftriage.core.parse import nvsmi
from perftriage.core.probes import (
    ProbeKind,
    Verdict,
    exit_verdict,
    register,
    register_lookup_kind,
)

# --- which NAME... ----------------------------------------------------------

register_lookup_kind(
    "which",
    usage="which NAME...",
    help="executables on the host's PATH (e.g. is nsys there?)",
    script=r"""
import shutil
found = {name: shutil.which(name) for name in sys.argv[1:]}
""",
    key="paths",
    found="{name}: {value}",
    missing="{name}: NOT FOUND",
)

# --- nvsmi ----------------------------------------------------------------------
# Same query and parser as the hosts pane (tui/perftriage/core/parse/nvsmi.py).


def _nvsmi_build(args: list[str], ctx) -> str:
    return nvsmi.query_command(nvsmi.QUERY_FIELDS)


def _nvsmi_verdict(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    if status == 127:
        return Verdict("failed", "nvidia-smi not found on the host", {"exit_status": status})
    if status != 0:
        last = (err.strip() or out.strip()).splitlines()
        return Verdict("failed", f"nvidia-smi exit {status}" + (f": {last[-1]}" if last else ""),
                       {"exit_status": status})
    gpus = [msgspec.to_builtins(g) for g in nvsmi.parse_query_csv(out, nvsmi.QUERY_FIELDS)]
    if not gpus:
        return Verdict("failed", "nvidia-smi listed no GPUs", {"gpus": []})
    names = sorted({str(g.get("name")) for g in gpus})
    util = [g.get("util_pct") for g in gpus]
    mem = [g.get("mem_used_mib") for g in gpus]
    summary = (f"{len(gpus)} GPU ({', '.join(names)}); util "
               + "/".join("?" if u is None else f"{u:.0f}%" for u in util)
               + "; mem " + "/".join("?" if m is None else f"{m / 1024:.0f}G" for m in mem))
    return Verdict("ok", summary, {"gpus": gpus})


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
        result_line=False,
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
        result_line=False,
    )
)

