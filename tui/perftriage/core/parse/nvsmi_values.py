"""What every nvidia-smi parser shares: the field names the sampler asks
for, their aliases and :class:`GpuSample` attributes, and the converters
that turn a printed value (``"223.56 W"``, ``"[N/A]"``) into a number or
``None``. Pure functions, no I/O."""

from __future__ import annotations

import functools
import re

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
    if value is None or is_na(value):
        return None
    m = _NUM_RE.match(value.strip())
    return float(m.group(0)) if m else None


def to_int(value: str | None) -> int | None:
    f = to_float(value)
    return int(f) if f is not None else None


def to_str(value: str | None) -> str | None:
    return None if value is None or is_na(value) else value.strip()


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
