"""The signals a check may name, after the JSON fields perftriage publishes.

A signal is ``FAMILY.FIELD`` (``gap.traffic_ratio``) or, for families keyed
by a name, ``FAMILY["KEY"].FIELD`` (``probe["cutedsl-import"].ok``,
``profile.bucket["moe"].pct``). The family decides the scope a signal is
read in: one value per GPU, per host, per engine or one for the session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from perftriage.core.model.findings import DIAGNOSES

Scope = Literal["gpu", "host", "engine", "session"]
# finer scopes first: a check is evaluated in the finest scope among its signals
SCOPE_ORDER: tuple[Scope, ...] = ("gpu", "engine", "host", "session")


@dataclass(frozen=True)
class Family:
    scope: Scope
    fields: frozenset[str]
    keyed: str | None = None  # "probe[...]" is keyed at the family; "profile.bucket[...]" below it
    stale_s: float | None = None  # older readings count as stale (no data); None: never stale
    doc: str = ""


# `status --json` gpus[] fields, plus the GPM counters of `gap`/the Hosts pane
GPU_FIELDS = frozenset({
    "util_pct", "mem_util_pct", "mem_used_mib", "mem_total_mib", "power_w", "power_limit_w",
    "temp_c", "sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz", "mem_clock_max_mhz", "dram_bw_pct", "dram_busy_pct", "dram_bw_gbs",
    "peak_gbs", "sm_active_pct", "sm_occupancy_pct", "tensor_active_pct", "nvlink_rx_gbs",
    "nvlink_tx_gbs", "nvlink_gbs", "name",
})
HOST_FIELDS = frozenset({"ok", "cpu_pct", "mem_used_bytes", "mem_total_bytes", "load1", "load5",
                         "load15", "gpu_count"})
# `gap --json`
GAP_FIELDS = frozenset({
    "floor_ms", "measured_ms", "gap", "peak_gbs", "dram_bw_gbs", "dram_busy_pct",
    "useful_bw_gbs", "traffic_ratio", "idle_pct", "tokens_per_s", "nvlink_pct", "batch",
    "slowest_gpu", "verdict", "verdict_kind", "source",
})
# the gap's old verdict: it judges no more (the triage does). Read for a release
# (a transcript's recorded verdict, else the triage's top), with this note
DEPRECATED_GAP = {
    "verdict": "gap.verdict is deprecated: the gap measures, the triage judges; read "
               "triage.top or triage.CAUSE_pct (gap.verdict goes in the next release)",
    "verdict_kind": "gap.verdict_kind is deprecated: read triage.top (the same cause ids: "
                    "wasted-traffic, near-floor, ...); gap.verdict_kind goes in the next release",
}


def deprecations(signals: list[Signal]) -> list[str]:
    """The deprecation notes of the signals a check reads (none for most)."""
    return [DEPRECATED_GAP[s.field] for s in signals
            if s.family == "gap" and s.field in DEPRECATED_GAP]


# `metrics --json` (the latest metric line of the host's logs)
LOG_FIELDS = frozenset({"gen_tps", "input_tps", "running", "queued", "token_usage", "engine",
                        "kind"})
# `engine --json`, quantiles flattened to milliseconds
ENGINE_FIELDS = frozenset({
    "engine", "running", "queued", "token_usage", "gen_tps", "prompt_tps", "cache_hit_rate",
    "spec_accept_length", "ok",
    *(f"{q}_{p}_ms" for q in ("ttft", "itl", "e2e") for p in ("p50", "p90", "p99")),
})
# `probe --json` of the latest finished run of that probe on the host
PROBE_FIELDS = frozenset({"ok", "verdict", "exit_status", "duration_s", "summary", "stdout",
                          "stderr"})
PROFILE_BUCKET_FIELDS = frozenset({"pct", "ms", "count", "top_name"})
PROFILE_TOP_FIELDS = frozenset({"name", "pct", "ms", "bucket"})
# idle_host_pct/idle_kernel_pct/idle_other_pct: trace --json idle_breakdown's shares;
# launch_delay_us_p50/p99 and short_kernels: its launch figures
PROFILE_FIELDS = frozenset({"total_ms", "kernels", "idle_pct", "idle_host_pct", "idle_kernel_pct",
                            "idle_other_pct", "launch_delay_us_p50", "launch_delay_us_p99",
                            "short_kernels"})

# the latest ncu probe's kernels matching REGEX, together (docs/kernels.md):
# achieved GB/s, share of the peak, share of kernel time, the biggest one's verdict
KERNEL_FIELDS = frozenset({"bw_pct", "gbs", "time_pct", "verdict"})
# the latest stacks probe on the host (`probe stacks --json`): the process holding
# the top frame; stacks.top.F its top frame; stacks.frame["NAME"].F a function
# (pct: its inclusive share, as total_pct)
STACKS_FIELDS = frozenset({"idle_pct", "gil_pct", "samples"})
STACKS_TOP_FIELDS = frozenset({"name", "file", "line", "self_pct", "total_pct"})
STACKS_FRAME_FIELDS = frozenset({"pct", "self_pct", "total_pct"})
# the live triage of the host (`triage.updated`, services/triage/live.py): the
# top finding of its current phase and each cause's share of the time.
# A cause's ``_pct`` is its confirmed finding's share, 0 when the triage saw
# enough to rule it out, no value while it still needs a witness (a lead).
# The causes are the findings vocabulary's (core/model/findings.py): every
# cause a diagnosis can name.
TRIAGE_CAUSES = DIAGNOSES
TRIAGE_FIELDS = frozenset({"top", "top_pct", "top_severity",
                           *(c.replace("-", "_") + "_pct" for c in TRIAGE_CAUSES)})
# FAMILY.SUB.FIELD and FAMILY.SUB["NAME"].FIELD: the fields of each
TOP_SUBS: dict[tuple[str, str], frozenset[str]] = {
    ("profile", "top"): PROFILE_TOP_FIELDS, ("stacks", "top"): STACKS_TOP_FIELDS}
KEYED_SUBS: dict[tuple[str, str], frozenset[str]] = {
    ("profile", "bucket"): PROFILE_BUCKET_FIELDS, ("stacks", "frame"): STACKS_FRAME_FIELDS}

FAMILIES: dict[str, Family] = {
    "gpu": Family("gpu", GPU_FIELDS, stale_s=10.0, doc="per GPU: status --json gpus[]"),
    "host": Family("host", HOST_FIELDS, stale_s=10.0, doc="per host: status --json"),
    "gap": Family("host", GAP_FIELDS, stale_s=10.0, doc="per host: gap --json"),
    "log": Family("host", LOG_FIELDS, stale_s=60.0, doc="per host: metrics --json"),
    "engine": Family("engine", ENGINE_FIELDS, stale_s=10.0, doc="per engine: engine --json"),
    "probe": Family("host", PROBE_FIELDS, keyed="probe", doc='per host: probe["NAME"].FIELD'),
    "profile": Family("session", PROFILE_FIELDS, doc="the profile summary"),
    "kernel": Family("session", KERNEL_FIELDS, keyed="kernel",
                     doc='kernel["REGEX"].FIELD: the latest ncu probe\'s matching kernels'),
    "stacks": Family("host", STACKS_FIELDS, stale_s=300.0,
                     doc="per host: the latest probe stacks --json"),
    "triage": Family("host", TRIAGE_FIELDS,
                     doc="per host: the live triage's top finding and each cause's share"),
}


@dataclass(frozen=True)
class Signal:
    """One signal reference: ``family``, optional ``key`` and ``field``.
    ``sub`` is a sub-family: ``profile.top``, ``stacks.top`` or the keyed
    ``profile.bucket["NAME"]``, ``stacks.frame["NAME"]``."""

    family: str
    field: str
    key: str | None = None
    sub: str | None = None

    @property
    def scope(self) -> Scope:
        return FAMILIES[self.family].scope

    def __str__(self) -> str:
        if self.family in ("probe", "kernel"):
            return f"{self.family}[{self.key!r}].{self.field}".replace("'", '"')
        if self.sub is not None and self.key is not None:
            return f'{self.family}.{self.sub}["{self.key}"].{self.field}'
        if self.sub is not None:
            return f"{self.family}.{self.sub}.{self.field}"
        return f"{self.family}.{self.field}"


def known_names() -> list[str]:
    """Every plain signal name, for error messages and the docs."""
    out = [f"{fam}.{f}" for fam, spec in FAMILIES.items() if not spec.keyed
           for f in sorted(spec.fields)]
    out += [f'probe["NAME"].{f}' for f in sorted(PROBE_FIELDS)]
    out += [f'kernel["REGEX"].{f}' for f in sorted(KERNEL_FIELDS)]
    for (fam, sub), fields in KEYED_SUBS.items():
        out += [f'{fam}.{sub}["NAME"].{f}' for f in sorted(fields)]
    for (fam, sub), fields in TOP_SUBS.items():
        out += [f"{fam}.{sub}.{f}" for f in sorted(fields)]
    return out
