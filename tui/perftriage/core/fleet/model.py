"""Fleet types: one sample per (host, GPU, metric), a snapshot of the fleet,
and its summary (counts, medians, ranked outliers).

A GPU metric (dcgm-exporter) has ``gpu`` set; an engine metric (``sglang:*``,
``vllm:*``) is per host and has ``gpu = None``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from perftriage.core.analysis.outliers import DEFAULT_THRESHOLD, RobustStats, outlier_indexes, robust_stats

# dcgm-exporter's series the fleet view reads, with a short label and a unit.
GPU_METRICS: dict[str, tuple[str, str]] = {
    "DCGM_FI_PROF_DRAM_ACTIVE": ("DRAM active", "ratio"),
    "DCGM_FI_PROF_SM_ACTIVE": ("SM active", "ratio"),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("tensor active", "ratio"),
    "DCGM_FI_DEV_GPU_UTIL": ("GPU util", "%"),
    "DCGM_FI_DEV_FB_USED": ("FB used", "MiB"),
    "DCGM_FI_DEV_POWER_USAGE": ("power", "W"),
}
ENGINE_PREFIXES = ("sglang:", "vllm:")


def metric_label(metric: str) -> str:
    """"DCGM_FI_PROF_DRAM_ACTIVE" -> "DRAM active"; engine names stay as they are."""
    return GPU_METRICS.get(metric, (metric, ""))[0]


def format_value(metric: str, value: float) -> str:
    unit = GPU_METRICS.get(metric, ("", ""))[1]
    if unit == "ratio":
        return f"{value:.2f}"
    if unit in ("%", "MiB", "W") or abs(value) >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


@dataclass(frozen=True, slots=True)
class FleetSample:
    host: str
    gpu: int | None
    metric: str
    value: float


@dataclass(frozen=True, slots=True)
class Outlier:
    host: str
    gpu: int | None
    metric: str
    value: float
    fleet_median: float
    distance: float

    def record(self) -> dict:
        """The JSON shape of ``perftriage fleet --json``'s outliers."""
        return {"host": self.host, "gpu": self.gpu, "metric": self.metric,
                "value": self.value, "fleet_median": self.fleet_median}

    def sentence(self) -> str:
        """"node117 GPU3 DRAM active 0.31 vs fleet median 0.56"."""
        where = self.host if self.gpu is None else f"{self.host} GPU{self.gpu}"
        return (f"{where} {metric_label(self.metric)} {format_value(self.metric, self.value)}"
                f" vs fleet median {format_value(self.metric, self.fleet_median)}")


@dataclass
class FleetSummary:
    hosts: int
    gpus: int
    medians: dict[str, float]
    outliers: list[Outlier]  # across metrics, largest robust distance first
    stats: dict[str, RobustStats] = field(default_factory=dict)

    def record(self) -> dict:
        """``{hosts, gpus, medians, outliers}`` as ``perftriage fleet --json`` prints it."""
        return {"hosts": self.hosts, "gpus": self.gpus, "medians": dict(self.medians),
                "outliers": [o.record() for o in self.outliers]}

    def metric_order(self) -> list[str]:
        """Metrics, the most deviating first (largest outlier distance, then name)."""
        worst: dict[str, float] = dict.fromkeys(self.medians, 0.0)
        for o in self.outliers:
            worst[o.metric] = max(worst.get(o.metric, 0.0), o.distance)
        return sorted(worst, key=lambda m: (-worst[m], m))


@dataclass
class FleetSnapshot:
    """Every sample of one Prometheus read, and when it was taken (Unix s).
    A read is not changed after it is made: its groupings are kept once
    computed (the summary, the grid and the node sets all ask)."""

    samples: list[FleetSample]
    taken_at: float = 0.0
    _grouped: dict[str, list[FleetSample]] | None = field(default=None, repr=False, compare=False)
    _hosts: list[str] | None = field(default=None, repr=False, compare=False)

    def hosts(self) -> list[str]:
        if self._hosts is None:
            self._hosts = sorted({s.host for s in self.samples})
        return self._hosts

    def gpu_count(self) -> int:
        return len({(s.host, s.gpu) for s in self.samples if s.gpu is not None})

    def by_metric(self) -> dict[str, list[FleetSample]]:
        if self._grouped is None:
            grouped: dict[str, list[FleetSample]] = defaultdict(list)
            for s in self.samples:
                grouped[s.metric].append(s)
            self._grouped = dict(grouped)
        return self._grouped

    def summarize(self, threshold: float = DEFAULT_THRESHOLD) -> FleetSummary:
        medians: dict[str, float] = {}
        stats: dict[str, RobustStats] = {}
        outliers: list[Outlier] = []
        for metric, samples in sorted(self.by_metric().items()):
            values = [s.value for s in samples]
            st = robust_stats(values)
            if st is None:
                continue
            stats[metric] = st
            medians[metric] = st.median
            for i, d in outlier_indexes(values, st, threshold):
                s = samples[i]
                outliers.append(Outlier(s.host, s.gpu, metric, s.value, st.median, d))
        outliers.sort(key=lambda o: (-o.distance, o.metric, o.host, -1 if o.gpu is None else o.gpu))
        return FleetSummary(hosts=len(self.hosts()), gpus=self.gpu_count(), medians=medians,
                            outliers=outliers, stats=stats)
