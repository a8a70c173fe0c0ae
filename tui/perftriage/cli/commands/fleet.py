"""`perftriage fleet --prometheus URL [--json] [--threshold D] [--top N]`.

Reads the fleet from Prometheus (dcgm-exporter's GPU fields and the
engines' gauges; see services/sources/fleet.py), and prints the host and GPU
counts, each metric's fleet median and the outliers ranked by robust
distance |value - median| / MAD (core/analysis/outliers.py), largest first.

``--json`` prints exactly ``{hosts, gpus, medians: {METRIC: value},
outliers: [{host, gpu, metric, value, fleet_median}]}``; ``gpu`` is null for
an engine (per-host) metric.

Exit status: 0 read (outliers or not); 1 Prometheus answered but not with
data; 2 usage (no URL given or configured); 3 Prometheus unreachable.
"""

from __future__ import annotations

import asyncio
import sys

import click

from perftriage.cli.globals import FiniteRange

from perftriage.cli.json_out import json_text
from perftriage.core.sanitize import visible_lines
from perftriage.cli import EXIT_FAILED, EXIT_UNREACHABLE, UsageFailure


def resolve_url(g, url: str | None, config) -> str:
    from perftriage.transport.prometheus import normalize_url

    url = url or g.prometheus or config.fleet.prometheus
    if not url:
        raise UsageFailure("no Prometheus to read: give --prometheus URL or set "
                           "[fleet] prometheus = \"http://host:9090\" in the config")
    try:
        return normalize_url(url)
    except ValueError as exc:
        raise UsageFailure(str(exc)) from None


async def _read(url: str, timeout: float):
    from perftriage.transport.prometheus import PrometheusClient

    async with PrometheusClient(url, timeout=timeout) as client:
        return await client.read_fleet()


def render_text(summary, top: int) -> str:
    from perftriage.core.fleet import nodeset
    from perftriage.core.fleet.model import format_value, metric_label

    lines = [f"{summary.hosts} hosts, {summary.gpus} GPUs"]
    width = max((len(metric_label(m)) for m in summary.medians), default=0)
    count = {m: 0 for m in summary.medians}
    for o in summary.outliers:
        count[o.metric] += 1
    for metric in summary.metric_order():
        flagged = f"  {count[metric]} outlier(s)" if count[metric] else ""
        lines.append(f"  {metric_label(metric):<{width}}  median "
                     f"{format_value(metric, summary.medians[metric]):>9}{flagged}")
    if not summary.outliers:
        lines.append("no outliers")
        return "\n".join(lines)
    lines.append(f"outliers (|value - median| / MAD > threshold), {len(summary.outliers)} in all:")
    for o in summary.outliers[:top]:
        lines.append(f"  {o.sentence()}  ({o.distance:.1f} MADs)")
    if len(summary.outliers) > top:
        lines.append(f"  ... {len(summary.outliers) - top} more (--top N, or --json)")
    lines.append("hosts with outliers: " + nodeset.fold(sorted({o.host for o in summary.outliers})))
    return "\n".join(lines)


@click.command("fleet")
@click.option("--prometheus", "url", metavar="URL",
              help="Prometheus to read (default: the config's [fleet] prometheus).")
@click.option("--json", "as_json", is_flag=True, help="Print {hosts, gpus, medians, outliers}.")
@click.option("--threshold", type=FiniteRange(min=0.0), default=None, metavar="D",
              help="Robust distance |value - median| / MAD past which a value is an outlier "
                   "(default: [fleet] threshold, 5).")
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True,
              help="Outliers listed in the text output.")
@click.option("--timeout", type=FiniteRange(min=0.1), default=10.0, show_default=True,
              metavar="SECONDS",
              help="Deadline for each Prometheus request (connect, headers, whole answer).")
@click.pass_obj
def command(g, url: str | None, as_json: bool, threshold: float | None, top: int,
            timeout: float) -> None:
    """Fleet-wide GPU and engine medians and outliers, from Prometheus.

    Exit: 0 ok, 1 Prometheus answered without data, 2 usage, 3 unreachable.
    """
    from perftriage.transport.prometheus import PrometheusError

    config = g.load_config()
    url = resolve_url(g, url, config)
    try:
        snapshot = asyncio.run(_read(url, timeout))
    except PrometheusError as exc:
        click.echo(f"perftriage fleet: {exc.reason}", err=True)
        sys.exit(EXIT_FAILED if exc.kind == "api" else EXIT_UNREACHABLE)
    summary = snapshot.summarize(config.fleet.threshold if threshold is None else threshold)
    if as_json:
        click.echo(json_text(summary.record(), indent=2))
    else:
        click.echo(visible_lines(render_text(summary, top)))
