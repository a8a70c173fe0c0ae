"""What a host prints about itself: the info command (``nvidia-smi topo -m``
and NVML bus widths, framed by ``@@topo`` / ``@@nvml`` / ``@@end``). The
one-shot snapshot of ``perftriage status`` becomes an event:
:mod:`perftriage.core.model.host_snapshot`."""

from __future__ import annotations

import contextlib
import json

from perftriage.core.parse import nvsmi


def parse_info(text: str) -> dict:
    """Output of :func:`info_command` -> HostInfo payload."""
    sections: dict[str, list[str]] = {}
    cur = None
    for line in text.splitlines():
        if line in ("@@topo", "@@nvml", "@@end"):
            cur = line[2:]
            sections[cur] = []
        elif cur is not None:
            sections[cur].append(line)
    info: dict = {}
    topo_text = "\n".join(sections.get("topo", []))
    topo = nvsmi.parse_topo(topo_text)
    if topo is not None:
        info["topo"] = topo.to_dict()
    elif topo_text.strip():
        info["topo_error"] = nvsmi.strip_ansi(topo_text.strip().splitlines()[0])[:200]
    raw = "\n".join(sections.get("nvml", [])).strip()
    if raw:
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            per = {k: nvsmi.bandwidth_gbs(v[0], v[1]) for k, v in json.loads(raw).items()}
            info["bandwidth_gbs"] = per
            info["bus_width_bits"] = {k: v[0] for k, v in json.loads(raw).items()}
            total = sum(v for v in per.values() if v)
            info["bandwidth_gbs_total"] = round(total, 1) if total else None
    return info
