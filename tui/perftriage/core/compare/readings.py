"""The readings a recording keeps, in one table: the event and field each
comes from, the series the recording keeps it in, the field of the triage's
:class:`~perftriage.core.triage.witnesses.Witnesses` that reads it (its
median over a phase; "" where the triage does not), and its unit.

A new reading is its event field, the sampler that fills it, one row here
and the rule that reads the witness. Readings that no single field holds
(a log line's decode rate, the mean of a host's GPUs' utilisation) have no
field: the recording's parsers make them, the row still names them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reading:
    series: str  # the recording's series id (per host)
    event: str  # the event's tag it is read from
    field: str  # the event's field ("" where a parser of the recording makes it)
    witness: str  # the Witnesses field the triage reads ("" where it does not)
    unit: str


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
    # made by the recording's parsers: NVML's busy share (the mean of the host's GPUs),
    # the decode lines of the server's log
    Reading("gpu_util", "host.sample", "", "gpu_util_pct", "%"),
    Reading("decode_tps", "log.lines", "", "decode_tps", "tok/s"),
    Reading("running", "log.lines", "", "running", "req"),
    Reading("queued", "log.lines", "", "queued", "req"),
    Reading("token_usage", "log.lines", "", "token_usage", ""),
)


def fields(event: str) -> tuple[tuple[str, str], ...]:
    """(series, field) of every reading an event's field holds as it is."""
    return tuple((r.series, r.field) for r in READINGS if r.event == event and r.field)


WITNESSED: tuple[Reading, ...] = tuple(r for r in READINGS if r.witness)
