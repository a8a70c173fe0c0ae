"""The readings a recording keeps, in one table: the event and field each
comes from, the series the recording keeps it in, the field of the triage's
:class:`~perftriage.core.triage.witnesses.Witnesses` that reads it (its
median over a phase; "" where the triage does not), and its unit.

A reading of each GPU of a ``host.sample`` (a field of its ``gpus``) says
how the host's one reading is made of its GPUs' (``gpus``: their mean, or
the fullest one's) and, for a share, the field it is a share of (``of``:
memory used of the total, in %).

A new reading is its event field, the sampler that fills it, one row here
and the rule that reads the witness: the recording feeds it, the
transcript loader's light struct decodes it (its fields are read from this
table) and the witness reads its median. Readings that no single field
holds (a log line's decode rate) have no field: the recording's parsers
make them, the row still names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PerGpu = Literal["", "mean", "max"]


@dataclass(frozen=True)
class Reading:
    series: str  # the recording's series id (per host)
    event: str  # the event's tag it is read from
    field: str  # the event's field ("" where a parser of the recording makes it)
    witness: str  # the Witnesses field the triage reads ("" where it does not)
    unit: str
    # a field of each of a host.sample's GPUs: the host's reading is their mean or max
    gpus: PerGpu = ""
    of: str = ""  # each GPU's reading is field / of, in % (memory used of the total)


READINGS: tuple[Reading, ...] = (
    Reading("gap", "gap.sample", "gap", "gap", "×"),
    Reading("traffic_ratio", "gap.sample", "traffic_ratio", "traffic_ratio", "×"),
    Reading("idle_pct", "gap.sample", "idle_pct", "dram_idle_pct", "%"),  # DRAM idle, not GPU
    Reading("dram_gbs", "gap.sample", "dram_bw_gbs", "", "GB/s"),
    Reading("useful_gbs", "gap.sample", "useful_bw_gbs", "", "GB/s"),
    Reading("batch", "gap.sample", "batch", "", "req"),
    Reading("cpu_pct", "host.sample", "cpu_pct", "cpu_pct", "%"),
    Reading("cpu_psi_some", "host.sample", "cpu_psi_some", "cpu_psi_some", "%"),
    Reading("cpu_throttled_pct", "host.sample", "cpu_throttled_pct", "cpu_throttled_pct", "%"),
    Reading("cpu_psi_some_cgroup", "host.sample", "cpu_psi_some_cgroup",
            "cpu_psi_some_cgroup", "%"),
    Reading("cpu_throttled_time_pct", "host.sample", "cpu_throttled_time_pct",
            "cpu_throttled_time_pct", "%"),
    # NVML, of each GPU: the share of the interval a kernel ran (the host's: the mean),
    # memory used of the total (the host's: the fullest GPU's)
    Reading("gpu_util", "host.sample", "util_pct", "gpu_util_pct", "%", gpus="mean"),
    Reading("gpu_mem_pct", "host.sample", "mem_used_mib", "gpu_mem_pct", "%", gpus="max",
            of="mem_total_mib"),
    # made by the recording's parsers: the decode lines of the server's log
    Reading("decode_tps", "log.lines", "", "decode_tps", "tok/s"),
    Reading("running", "log.lines", "", "running", "req"),
    Reading("queued", "log.lines", "", "queued", "req"),
    Reading("token_usage", "log.lines", "", "token_usage", ""),
)


def fields(event: str) -> tuple[tuple[str, str], ...]:
    """(series, field) of every reading an event's field holds as it is."""
    return tuple((r.series, r.field) for r in READINGS
                 if r.event == event and r.field and not r.gpus)


WITNESSED: tuple[Reading, ...] = tuple(r for r in READINGS if r.witness)
# the readings of each GPU of a host.sample
GPU_READINGS: tuple[Reading, ...] = tuple(r for r in READINGS if r.gpus)
# the fields of a host.sample's GPUs these readings need (the loader decodes no other)
GPU_FIELDS: tuple[str, ...] = tuple(dict.fromkeys(
    f for r in GPU_READINGS for f in (r.field, r.of) if f))


def host_value(r: Reading, gpus: list) -> float | None:
    """The host's reading ``r`` of its GPUs (objects with ``r.field``; None: none read)."""
    if r.of:
        values = [100.0 * used / total for g in gpus
                  if (used := getattr(g, r.field)) is not None and (total := getattr(g, r.of))]
    else:
        values = [v for g in gpus if (v := getattr(g, r.field)) is not None]
    if not values:
        return None
    return max(values) if r.gpus == "max" else sum(values) / len(values)
