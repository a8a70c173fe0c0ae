"""``host.info`` typed at the door.

``HostInfo.info`` is a free-form dict (samplers add facts as they learn them),
and transcripts come from older versions, other machines or a hand edit. The
reducer passes every ``host.info`` through :func:`clean`, so the readers (the
panes, the report, the roofline form) can trust the shape of the keys they
use: a per-GPU map is a ``{"0": float}`` dict, a total is a float, text is
text. A value of the wrong shape is dropped, not guessed at.
"""

from __future__ import annotations

import math
from typing import Any


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def _per_gpu(v: Any) -> dict[str, float] | None:
    """``{"0": 4814.3, …}`` (also accepts a bare number for every GPU: ``{"*": n}``)."""
    if isinstance(v, dict):
        out = {str(k): n for k, x in v.items() if (n := _number(x)) is not None}
        return out or None
    n = _number(v)
    return {"*": n} if n is not None else None


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _strings(v: Any) -> list[str]:
    return [str(x) for x in v] if isinstance(v, list) else []


def _topo(v: Any) -> dict | None:
    if not isinstance(v, dict):
        return None
    rows = [_strings(r) for r in v.get("rows") or [] if isinstance(r, list)] \
        if isinstance(v.get("rows"), list) else []
    return {"columns": _strings(v.get("columns")), "rows": rows,
            "legend": _strings(v.get("legend"))}


def _processes(v: Any) -> dict[str, list[dict]] | None:
    if not isinstance(v, dict):
        return None
    out: dict[str, list[dict]] = {}
    for gpu, procs in v.items():
        if not isinstance(procs, list):
            continue
        out[str(gpu)] = [
            {"pid": p["pid"] if isinstance(p.get("pid"), int) else 0,
             "name": str(p.get("name") or ""), "used_mib": _number(p.get("used_mib"))}
            for p in procs if isinstance(p, dict)
        ]
    return out


SHAPES = {
    "bandwidth_gbs": _per_gpu,
    "bus_width_bits": _per_gpu,
    "bandwidth_gbs_total": _number,
    "driver": _text,
    "gpu_source": _text,
    "topo_error": _text,
    "topo": _topo,
    "processes": _processes,
}


def clean(info: Any) -> dict[str, Any]:
    """``info`` with every known key in its documented shape (wrong shapes
    dropped; ``None`` kept: it clears a fact). Unknown keys pass through."""
    if not isinstance(info, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in info.items():
        shape = SHAPES.get(key)
        if shape is None or value is None:
            out[str(key)] = value
        elif (typed := shape(value)) is not None:
            out[key] = typed
    return out


def gpu_bandwidth(info: dict[str, Any], index: int) -> float | None:
    """Peak memory bandwidth of GPU ``index`` (GB/s) from a cleaned ``info``."""
    per = info.get("bandwidth_gbs") or {}
    return per.get(str(index), per.get("*"))


def bandwidth_summary(info: dict[str, Any]) -> str | None:
    """``"4814 GB/s per GPU"`` (or a range when the GPUs differ)."""
    values = sorted(set((info.get("bandwidth_gbs") or {}).values()))
    if not values:
        return None
    if values[0] == values[-1]:
        return f"{values[0]:.0f} GB/s per GPU"
    return f"{values[0]:.0f}–{values[-1]:.0f} GB/s per GPU"
