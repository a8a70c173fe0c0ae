"""`perftriage status`: one snapshot of hosts, CPUs and GPUs (or a refreshing one).

``--json`` prints ``{"hosts": [{"host", "ok", "error", "cpu_pct",
"mem_used_bytes", "mem_total_bytes", "load1", "gpus": [{"index", "name",
"uuid", "util_pct", "mem_used_mib", "mem_total_mib", "power_w",
"power_limit_w", "temp_c", "sm_clock_mhz", "mem_clock_mhz", ..., "dram_bw_pct",
"dram_bw_gbs", "sm_active_pct", "sm_occupancy_pct", "tensor_active_pct",
"gpm_error"}]}]}`` (GPM counters: null with ``gpm_error`` when unavailable)
(null where n/a; extra fields may be added). With ``--watch`` each refresh
is one such JSON object per line. Exit status 3 when a host could not be
reached (its entry has ``ok: false`` and the one-line ``error``).
"""

from __future__ import annotations

import asyncio
import sys
import time

import click

from perftriage.cli.globals import FiniteRange

from perftriage.cli.json_out import json_text
from perftriage.core.sanitize import visible_lines
from perftriage.cli import EXIT_OK, EXIT_UNREACHABLE, UsageFailure


async def _snapshot(registry, timeout: float) -> dict:
    from perftriage.services.sources.gpm_snapshot import host_counters, merge_into_status
    from perftriage.services.sampling.remote_sampler import snapshot_host

    hosts = list(registry.hosts.values())
    results, gpm = await asyncio.gather(  # GPM counters read alongside, not after
        asyncio.gather(*(snapshot_host(h, timeout) for h in hosts)),
        asyncio.gather(*(host_counters(h, timeout) for h in hosts)))
    for entry, (counters, error, _source) in zip(results, gpm, strict=True):
        merge_into_status(entry, counters, error)
    return {"hosts": list(results)}


def _n(v, fmt: str = "{:.0f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def render_text(snap: dict) -> str:
    lines = []
    width = max((len(h["host"]) for h in snap["hosts"]), default=4)
    for h in snap["hosts"]:
        if not h["ok"]:
            lines.append(f"{h['host']:<{width}}  DOWN  {h['error']}")
            continue
        gib = 2**30
        mem = (f"{h['mem_used_bytes'] / gib:.1f}/{h['mem_total_bytes'] / gib:.1f}G"
               if h["mem_used_bytes"] is not None and h["mem_total_bytes"] else "n/a")
        lines.append(f"{h['host']:<{width}}  up    CPU {_n(h['cpu_pct'], '{:.1f}')}%  RAM {mem}"
                     f"  load {_n(h['load1'], '{:.2f}')}")
        if h.get("gpu_error") and not h["gpus"]:
            lines.append(f"  {h['gpu_error']}")
        for g in h["gpus"]:
            lines.append(
                f"  GPU{g['index']} {g['name']}  util {_n(g['util_pct'])}%"
                f"  mem {_n(g['mem_used_mib'])}/{_n(g['mem_total_mib'])} MiB"
                f"  power {_n(g['power_w'])}/{_n(g['power_limit_w'])} W"
                f"  temp {_n(g['temp_c'])}°C  SM {_n(g['sm_clock_mhz'])} MHz"
                f"  mem clock {_n(g['mem_clock_mhz'])} MHz"
                + (f"  DRAM {_n(g.get('dram_bw_gbs'))} GB/s ({_n(g.get('dram_bw_pct'))}%)"
                   if g.get("dram_bw_pct") is not None else
                   f"  DRAM n/a ({g['gpm_error']})" if g.get("gpm_error") else "")
            )
    return "\n".join(lines)


@click.command("status")
@click.option("--host", "host_specs", multiple=True, metavar="SPEC",
              help="Host to show (config name, ssh alias, user@host[:port]). Repeatable.")
@click.option("--all", "all_hosts", is_flag=True, help="localhost and every configured host.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per refresh).")
@click.option("--watch", is_flag=True, help="Refresh until interrupted.")
@click.option("--interval", type=FiniteRange(min=0.2), default=None, metavar="SECONDS",
              help="Refresh period for --watch (default: --sample-interval, else 2).")
@click.option("--timeout", type=FiniteRange(min=0.5), default=20.0, show_default=True,
              metavar="SECONDS", help="Per-host limit.")
@click.pass_obj
def command(g, host_specs, all_hosts: bool, as_json: bool, watch: bool, interval, timeout) -> None:
    """Print a snapshot of hosts, CPUs and GPUs (default: the -H hosts, else localhost)."""
    if host_specs and all_hosts:
        raise UsageFailure("--host and --all exclude each other")
    config = g.load_config()
    specs = list(host_specs) or list(g.hosts)
    if all_hosts:
        specs = []
    elif not specs:
        specs = ["localhost"]
    saved = g.hosts
    g.hosts = specs
    try:
        registry = g.resolve_hosts(config)
    finally:
        g.hosts = saved
    period = interval or g.sample_interval or 2.0
    code = EXIT_OK

    async def main() -> int:
        worst = EXIT_OK
        try:
            while True:
                started = time.monotonic()
                snap = await _snapshot(registry, timeout)
                if any(not h["ok"] for h in snap["hosts"]):
                    worst = EXIT_UNREACHABLE
                if as_json:
                    sys.stdout.write(json_text(snap, indent=None if watch else 2) + "\n")
                else:
                    if watch:
                        click.clear()
                    click.echo(visible_lines(render_text(snap)))
                sys.stdout.flush()
                if not watch:
                    return worst
                await asyncio.sleep(max(0.0, period - (time.monotonic() - started)))
        finally:
            await registry.close()

    try:
        code = asyncio.run(main())
    except KeyboardInterrupt:
        code = EXIT_OK
    if code:
        raise SystemExit(code)
