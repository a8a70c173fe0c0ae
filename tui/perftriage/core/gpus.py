"""Peak HBM/GDDR bandwidth per GPU: from the hardware when it can be read,
else from a table of known GPUs matched by the names ``nvidia-smi`` prints.

The hardware figure is NVML's ``2 x max memory clock x bus width / 8``
(double data rate). On a real H200 that is 2 x 3201 MHz x 6016 bit / 8 =
4814.3 GB/s (``../shared/fixtures/h200-bandwidth``). ``nvidia-smi`` has no
query field for the bus width, so a remote host without pynvml falls back to
the table; every figure says where it came from (``source``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class KnownGpu:
    name: str  # as nvidia-smi / NVML print it
    peak_gbs: float  # per GPU, GB/s (1e9 bytes)
    source: str  # where the figure comes from
    aliases: tuple[str, ...] = ()


# Names exactly as nvidia-smi prints them; figures from the vendor datasheets.
TABLE: tuple[KnownGpu, ...] = (
    KnownGpu("NVIDIA H200", 4800.0, "NVIDIA H200 datasheet (4.8 TB/s HBM3e)",
             ("h200", "h200sxm", "h200141gb", "h200141gbhbm3e")),
    KnownGpu("NVIDIA H100 80GB HBM3", 3350.0, "NVIDIA H100 SXM5 datasheet (3.35 TB/s HBM3)",
             ("h100", "h100sxm", "h100sxm5", "h10080gbhbm3", "h100sxm580gb")),
    KnownGpu("NVIDIA H100 PCIe", 2000.0, "NVIDIA H100 PCIe datasheet (2.0 TB/s HBM2e)",
             ("h100pcie", "h100pcie80gb")),
    KnownGpu("NVIDIA H100 NVL", 3900.0, "NVIDIA H100 NVL datasheet (3.9 TB/s HBM3)", ("h100nvl",)),
    KnownGpu("NVIDIA B200", 8000.0, "NVIDIA HGX B200 datasheet (8 TB/s HBM3e)", ("b200",)),
    KnownGpu("NVIDIA A100-SXM4-80GB", 2039.0, "NVIDIA A100 80GB SXM datasheet (2039 GB/s HBM2e)",
             ("a100", "a10080gb", "a100sxm80gb", "a100sxm480gb", "a10080gbsxm")),
    KnownGpu("NVIDIA A100-SXM4-40GB", 1555.0, "NVIDIA A100 40GB SXM datasheet (1555 GB/s HBM2)",
             ("a10040gb", "a100sxm440gb")),
    KnownGpu("NVIDIA A100 80GB PCIe", 1935.0, "NVIDIA A100 80GB PCIe datasheet (1935 GB/s HBM2e)",
             ("a10080gbpcie", "a100pcie80gb")),
    KnownGpu("NVIDIA RTX PRO 6000 Blackwell Server Edition", 1792.0,
             "NVIDIA RTX PRO 6000 Blackwell datasheet (512-bit GDDR7, 1792 GB/s)",
             ("rtxpro6000blackwellserver", "rtxpro6000server")),
    KnownGpu("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 1792.0,
             "NVIDIA RTX PRO 6000 Blackwell datasheet (512-bit GDDR7, 1792 GB/s)",
             ("rtxpro6000", "rtxpro6000blackwell", "rtxpro6000blackwellworkstation",
              "rtxpro6000workstation")),
    KnownGpu("NVIDIA L40S", 864.0, "NVIDIA L40S datasheet (864 GB/s GDDR6)", ("l40s",)),
)


def norm(name: str) -> str:
    """Drop case, spaces, dashes, underscores and an ``NVIDIA`` prefix:
    ``"NVIDIA H200"``, ``"nvidia-h200"`` and ``"H200"`` are one key."""
    key = re.sub(r"[\s\-_]+", "", name.strip().lower())
    return key[len("nvidia"):] if key.startswith("nvidia") else key


_BY_KEY: dict[str, KnownGpu] = {}
for _gpu in TABLE:
    _BY_KEY[norm(_gpu.name)] = _gpu
    for _alias in _gpu.aliases:
        _BY_KEY.setdefault(_alias, _gpu)


def unknown_text(name: str) -> str:
    """``unknown GPU 'foo'; known: NVIDIA H200, ...``: the refusal of a name
    :func:`find` does not know (``roofline --gpu``, ``kernels --gpu``)."""
    return f"unknown GPU {name!r}; known: {', '.join(g.name for g in TABLE)}"


def find(name: str | None) -> KnownGpu | None:
    """The table entry for a GPU name or alias, else None."""
    return _BY_KEY.get(norm(name)) if name else None


def nvml_peak_gbs(bus_width_bits: int | None, mem_clock_max_mhz: float | None) -> float | None:
    """``2 x max memory clock x bus width / 8`` in GB/s, or None when unknown."""
    if not bus_width_bits or not mem_clock_max_mhz:
        return None
    return round(2 * mem_clock_max_mhz * 1e6 * bus_width_bits / 8 / 1e9, 1)


@dataclass(frozen=True)
class Peak:
    gbs: float | None
    source: str  # "nvml" (bus width x clock), "table: <datasheet>", or why unknown


def peak_bandwidth(name: str | None, bus_width_bits: int | None = None,
                   mem_clock_max_mhz: float | None = None,
                   measured_gbs: float | None = None) -> Peak:
    """The best peak figure for one GPU: NVML's, else the table's, else None."""
    if measured_gbs:
        return Peak(round(measured_gbs, 1), "nvml: 2 x max memory clock x bus width / 8")
    hw = nvml_peak_gbs(bus_width_bits, mem_clock_max_mhz)
    if hw:
        return Peak(hw, f"nvml: 2 x {mem_clock_max_mhz:g} MHz x {bus_width_bits} bit / 8")
    known = find(name)
    if known is not None:
        return Peak(known.peak_gbs, f"table: {known.source}")
    return Peak(None, f"unknown GPU {name!r}: no bus width from NVML and not in the table")
