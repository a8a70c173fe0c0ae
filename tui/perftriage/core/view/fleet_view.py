"""What the Fleet view draws, computed without Textual: the hosts x GPUs grid
of one metric sorted by what deviates, the medians strip, the ranked
outliers, and host lists folded into node sets.

A grid cell's distance is its robust distance from the fleet median of that
metric (core/analysis/outliers.py); a host's row is sorted by its worst cell,
so the odd hosts come first and the 500 normal ones fold into one line
(``node[001-116,118-512]``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from rich.text import Text

from perftriage.core.fleet.model import FleetSnapshot, FleetSummary, format_value, metric_label
from perftriage.core.fleet.nodeset import fold

OUTLIER_STYLE = "bold red"
NEAR_STYLE = "yellow"  # past half the threshold


@dataclass
class GridRow:
    host: str
    values: list[float | None]  # one per column (GPU index, or the one host column)
    distances: list[float]
    worst: float


@dataclass
class MetricGrid:
    metric: str
    columns: list[str]  # "GPU0" ... or ["value"] for an engine (per-host) metric
    rows: list[GridRow]  # worst first, then by host name
    median: float | None


def metric_grid(snapshot: FleetSnapshot, summary: FleetSummary, metric: str) -> MetricGrid:
    """Hosts x GPUs of ``metric``, the most deviating host first."""
    stats = summary.stats.get(metric)
    per_host: dict[str, dict[int | None, float]] = defaultdict(dict)
    gpus: set[int] = set()
    for s in snapshot.by_metric().get(metric, []):
        per_host[s.host][s.gpu] = s.value
        if s.gpu is not None:
            gpus.add(s.gpu)
    keys: list[int | None] = [*sorted(gpus)] if gpus else [None]
    columns = [f"GPU{g}" for g in keys] if gpus else ["value"]
    rows = []
    for host, by_gpu in per_host.items():
        values = [by_gpu.get(k) for k in keys]
        dists = [stats.distance(v) if (stats and v is not None) else 0.0 for v in values]
        rows.append(GridRow(host, values, dists, max(dists, default=0.0)))
    rows.sort(key=lambda r: (-r.worst, r.host))
    return MetricGrid(metric, columns, rows, stats.median if stats else None)


def cell(metric: str, value: float | None, distance: float, threshold: float) -> Text:
    if value is None:
        return Text("–", style="dim")
    style = OUTLIER_STYLE if distance > threshold else NEAR_STYLE if distance > threshold / 2 else ""
    return Text(format_value(metric, value), style=style, justify="right")


def medians_text(summary: FleetSummary) -> Text:
    """Each metric's fleet median, the most deviating metric first; flagged
    ones carry their outlier count."""
    counts: dict[str, int] = defaultdict(int)
    for o in summary.outliers:
        counts[o.metric] += 1
    out = Text()
    for i, metric in enumerate(summary.metric_order()):
        if i:
            out.append("  ·  ", style="dim")
        out.append(f"{metric_label(metric)} ", style="bold" if counts[metric] else "")
        out.append(format_value(metric, summary.medians[metric]))
        if counts[metric]:
            out.append(f" ({counts[metric]}!)", style=OUTLIER_STYLE)
    return out


def outlier_texts(summary: FleetSummary, limit: int = 200) -> list[Text]:
    """"node117 GPU3 DRAM active 0.31 vs fleet median 0.56  25.0×MAD", ranked."""
    return [Text.assemble((o.sentence(), OUTLIER_STYLE if i == 0 else ""),
                          (f"  {o.distance:.1f}×MAD", "dim"))
            for i, o in enumerate(summary.outliers[:limit])]


def folded_hosts(snapshot: FleetSnapshot, summary: FleetSummary) -> tuple[str, str, int, int]:
    """(node set of hosts with an outlier, node set of the others, their counts)."""
    odd = sorted({o.host for o in summary.outliers})
    odd_set = set(odd)
    normal = [h for h in snapshot.hosts() if h not in odd_set]
    return fold(odd), fold(normal), len(odd), len(normal)
