"""Decode roofline: the memory-bandwidth floor per token and the gap to it.

At batch 1 every decode step must stream the weights it uses (for an MoE only
the active experts) plus the KV cache from HBM, so::

    floor_s/token = bytes read per step / aggregate memory bandwidth

Units: sizes in GB (1e9 bytes) and bandwidth in GB/s, like the vendors'
datasheets. Pure arithmetic, no I/O: the CLI (``perftriage roofline``) and
the UI panel both call :func:`compute`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from perftriage.core import gpus

# Per-GPU peak memory bandwidth, GB/s, keyed by the name nvidia-smi prints
# (vendor datasheets; see core/gpus.py for the sources and aliases).
KNOWN_GPUS: dict[str, float] = {g.name: g.peak_gbs for g in gpus.TABLE}


# How a message names each input: the CLI's flags (``str(error)``); the gap
# form passes its own labels to :meth:`RooflineError.worded` instead.
FLAGS: dict[str, str] = {
    "weights_gb": "--weights-gb", "active_params_b": "--active-params-b", "bits": "--bits",
    "kv_gb": "--kv-gb", "gpus": "--gpus", "bandwidth_gbs": "--bandwidth-gbs",
    "gpu": "--gpu NAME", "measured_ms": "--measured-ms",
}


class RooflineError(ValueError):
    """Bad input: the message says which value and why. ``template`` names
    the inputs as ``{weights_gb}``…; ``str()`` words them as CLI flags."""

    def __init__(self, template: str) -> None:
        self.template = template
        super().__init__(self.worded(FLAGS))

    def worded(self, names: dict[str, str]) -> str:
        """The message with each input called by ``names`` (a form's labels)."""
        return self.template.format_map(names)


def literal(text: str) -> str:
    """``text`` (a user's value) safe inside a message template."""
    return text.replace("{", "{{").replace("}", "}}")


def lookup_gpu(name: str) -> tuple[str, float]:
    """(canonical name, GB/s) for a known GPU name or alias, else RooflineError."""
    known = gpus.find(name)
    if known is None:
        raise RooflineError(literal(gpus.unknown_text(name)) + " (or give {bandwidth_gbs})")
    return known.name, known.peak_gbs


def bandwidth_from_nvml(bus_width_bits: int | None, mem_clock_max_mhz: float | None) -> float | None:
    """Peak GB/s from NVML's memory bus width and max memory clock
    (double data rate: two transfers per clock), or None when unknown."""
    if not bus_width_bits or not mem_clock_max_mhz:
        return None
    return bus_width_bits / 8 * mem_clock_max_mhz * 1e6 * 2 / 1e9


@dataclass(frozen=True)
class RooflineResult:
    floor_ms: float
    ceiling_tps: float
    measured_ms: float | None
    gap: float | None
    efficiency_pct: float | None
    bandwidth_gbs_total: float
    bytes_gb: float  # read per decode step

    def public(self) -> dict[str, float | None]:
        """The ``--json`` object, in its documented key order."""
        d = asdict(self)
        d.pop("bytes_gb")
        return d


def _check(key: str, value: float | None, *, positive: bool = True) -> None:
    name = "{" + key + "}"
    if value is None:
        return
    if not math.isfinite(value):
        raise RooflineError(f"{name} must be a finite number, got {value}")
    if positive and value <= 0:
        raise RooflineError(f"{name} must be greater than 0, got {value:g}")
    if not positive and value < 0:
        raise RooflineError(f"{name} must not be negative, got {value:g}")


def bytes_per_step_gb(
    weights_gb: float | None = None,
    active_params_b: float | None = None,
    bits: float | None = None,
    kv_gb: float | None = None,
) -> float:
    """GB read per decode step: weights (given, or active params x bits) + KV."""
    _check("weights_gb", weights_gb)
    _check("active_params_b", active_params_b)
    _check("bits", bits)
    _check("kv_gb", kv_gb, positive=False)
    if weights_gb is not None and active_params_b is not None:
        raise RooflineError("give either {weights_gb} or {active_params_b}, not both")
    if weights_gb is None:
        if active_params_b is None:
            raise RooflineError("give {weights_gb}, or {active_params_b} with {bits}")
        if bits is None:
            raise RooflineError("{active_params_b} needs {bits} (e.g. 8 for FP8, 4 for FP4)")
        weights_gb = active_params_b * bits / 8  # 1e9 params x bits/8 bytes = GB
    elif bits is not None:
        raise RooflineError("{bits} only applies with {active_params_b}")
    return weights_gb + (kv_gb or 0.0)


def resolve_bandwidth(bandwidth_gbs: float | None = None, gpu: str | None = None) -> float:
    """Per-GPU GB/s from --bandwidth-gbs or the known-GPU table."""
    _check("bandwidth_gbs", bandwidth_gbs)
    if bandwidth_gbs is not None and gpu:
        raise RooflineError("give either {bandwidth_gbs} or {gpu}, not both")
    if bandwidth_gbs is not None:
        return bandwidth_gbs
    if gpu:
        return lookup_gpu(gpu)[1]
    raise RooflineError("give {bandwidth_gbs} or {gpu}")


def _r(x: float) -> float:
    return float(round(x, 4))


def compute(
    *,
    gpus: int,
    weights_gb: float | None = None,
    active_params_b: float | None = None,
    bits: float | None = None,
    kv_gb: float | None = None,
    bandwidth_gbs: float | None = None,
    gpu: str | None = None,
    measured_ms: float | None = None,
) -> RooflineResult:
    """Floor, ceiling and (with ``measured_ms``) gap and efficiency.
    Raises :class:`RooflineError` on bad input."""
    if gpus is None or isinstance(gpus, bool) or int(gpus) != gpus or gpus < 1:
        raise RooflineError(f"{{gpus}} must be a whole number of at least 1, got {gpus}")
    size_gb = bytes_per_step_gb(weights_gb, active_params_b, bits, kv_gb)
    per_gpu = resolve_bandwidth(bandwidth_gbs, gpu)
    _check("measured_ms", measured_ms)
    total = per_gpu * int(gpus)
    floor_ms = size_gb / total * 1000.0
    gap = eff = None
    if measured_ms is not None:
        gap = measured_ms / floor_ms
        eff = floor_ms / measured_ms * 100.0
    return RooflineResult(
        floor_ms=_r(floor_ms),
        ceiling_tps=_r(1000.0 / floor_ms),
        measured_ms=None if measured_ms is None else float(measured_ms),
        gap=None if gap is None else _r(gap),
        efficiency_pct=None if eff is None else _r(eff),
        bandwidth_gbs_total=_r(total),
        bytes_gb=_r(size_gb),
    )


def fmt_gap(gap: float | None) -> str:
    return "n/a" if gap is None else f"{gap:.1f}x"


def ceiling_words(ceiling_tps: float, batch: float | None = None) -> str:
    """The ceiling is one sequence's (1 / floor): beside an aggregate throughput
    it needs the batch's too (batch x 1 / floor), or it reads 3x exceeded."""
    words = f"ceiling {ceiling_tps:.4g} tok/s per sequence"
    if batch is not None and batch > 1:
        words += f" ({ceiling_tps * batch:.4g} tok/s aggregate at batch {batch:g})"
    return words


def summary_line(r: Any) -> str:
    """One line for a result or a GapComputed event (same field names)."""
    parts = [f"floor {r.floor_ms:.3g} ms/token",
             ceiling_words(r.ceiling_tps, getattr(r, "measured_batch", None))]
    if r.measured_ms is not None:
        parts.append(f"measured {r.measured_ms:g} ms")
        parts.append(f"gap {fmt_gap(r.gap)}")
        if r.efficiency_pct is not None:
            parts.append(f"bandwidth efficiency {r.efficiency_pct:.1f}%")
    return " · ".join(parts)
