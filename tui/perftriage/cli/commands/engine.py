"""`perftriage engine`: an inference engine's own figures from its /metrics.

The page is read through the host's SSH connection (a direct-tcpip channel,
no port opened on the GPU host) or, for localhost, straight from loopback,
once a second for ``--seconds``; gauges come from the last scrape, rates and
quantiles from the whole window (first scrape vs last, across restarts).

``--json`` prints exactly ``{engine, running, queued, token_usage, gen_tps,
prompt_tps, ttft_s: {p50, p90, p99}, itl_s: {p50, p90, p99}, e2e_s: {p50,
p90, p99}, cache_hit_rate, spec_accept_length, metrics_seen, engine_read_gbs,
preemptions}`` (``engine_read_gbs``: the engine's own estimate of memory
reads per GPU over the window; ``preemptions`` in the window; null where the
engine does not say; ``engine`` is ``sglang`` or ``vllm`` from the metric
prefix; ``metrics_seen`` counts the metric families on the page).
Exit: 0 ok, 1 the page is not a metrics page (HTTP error, not Prometheus
text), 2 bad usage (a malformed URL), 3 host or endpoint unreachable.
"""

from __future__ import annotations

import asyncio
import time

import click

from perftriage.cli.globals import FiniteRange

from perftriage.cli import EXIT_FAILED, EXIT_OK, EXIT_UNREACHABLE
from perftriage.cli.json_out import json_text


def _n(value, fmt: str = "{:.1f}", unit: str = "") -> str:
    return "n/a" if value is None else fmt.format(value) + unit


def _ms(q) -> str:
    if q.p50 is None:
        return "n/a"
    return " / ".join(_n(None if v is None else v * 1000, "{:.1f}") for v in (q.p50, q.p90, q.p99)) \
        + " ms"


def render_text(f, url: str, seconds: float) -> str:
    usage = None if f.token_usage is None else f.token_usage * 100
    hit = None if f.cache_hit_rate is None else f.cache_hit_rate * 100
    return "\n".join([
        f"{f.engine or 'unknown engine'} at {url} ({f.metrics_seen} metric families, "
        f"{seconds:g} s window)",
        f"  running {_n(f.running, '{:.0f}')}  queued {_n(f.queued, '{:.0f}')}"
        f"  KV usage {_n(usage, '{:.1f}', '%')}",
        f"  generation {_n(f.gen_tps, unit=' tok/s')}  prompt {_n(f.prompt_tps, unit=' tok/s')}",
        f"  TTFT  p50/p90/p99 {_ms(f.ttft_s)}",
        f"  ITL   p50/p90/p99 {_ms(f.itl_s)}",
        f"  e2e   p50/p90/p99 {_ms(f.e2e_s)}",
        f"  prefix cache hit {_n(hit, '{:.1f}', '%')}"
        f"  spec accept length {_n(f.spec_accept_length, '{:.2f}')}",
        f"  engine's estimated read {_n(f.engine_read_gbs, '{:.0f}', ' GB/s per GPU')}"
        f"  preemptions {_n(f.preemptions, '{:.0f}')}",
    ])


def as_json(f) -> dict:
    data = f.to_json_dict()
    for key in ("running", "queued"):  # request counts read as integers
        if isinstance(data[key], float) and data[key].is_integer():
            data[key] = int(data[key])
    return data


async def watch(transport, url: str, seconds: float):
    """Scrape once a second for ``seconds``: (figures, error, exit code)."""
    from perftriage.core.model.engine_window import derive
    from perftriage.services.sources.engine_metrics import ScrapeError, scrape
    from perftriage.transport.http_get import HttpGetter

    getter = HttpGetter(transport, url)
    window = []
    start = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            try:
                window.append((now, await scrape(getter)))
            except ScrapeError as exc:
                if not window:  # later failures: the window so far still answers
                    return None, (str(exc), EXIT_UNREACHABLE if exc.unreachable else EXIT_FAILED)
            elapsed = time.monotonic() - start
            if elapsed >= seconds:
                break
            await asyncio.sleep(min(1.0, seconds - elapsed))
    finally:
        await getter.close()
    return derive(window), None


@click.command("engine")
@click.option("--host", "host", metavar="SPEC",
              help="Read the endpoint as this host sees it (config name, ssh alias, "
                   "user@host[:port]); default localhost.")
@click.option("--url", required=True, metavar="URL",
              help="The engine's metrics page, e.g. http://127.0.0.1:30000/metrics.")
@click.option("--seconds", type=FiniteRange(min=0), default=5.0, show_default=True,
              metavar="S", help="Window for rates and quantiles (0: one scrape, gauges only).")
@click.option("--json", "as_json_flag", is_flag=True, help="Print the figures as JSON.")
@click.pass_obj
def command(g, host: str | None, url: str, seconds: float, as_json_flag: bool) -> None:
    """Print an SGLang/vLLM server's figures from its Prometheus /metrics.

    Exit: 0 ok, 1 not a metrics page, 2 bad URL or host, 3 unreachable.
    """
    config, registry, name = g.one_host_for_url(host, url)

    async def main():
        try:
            return await watch(registry.get(name).transport, url, seconds)
        finally:
            await registry.close()

    figures, error = asyncio.run(main())
    if error is not None:
        message, code = error
        click.echo(f"perftriage engine: {name}: {message}", err=True)
        raise SystemExit(code)
    if as_json_flag:
        click.echo(json_text(as_json(figures), indent=2))
    else:
        click.echo(render_text(figures, url, seconds))
    raise SystemExit(EXIT_OK)
