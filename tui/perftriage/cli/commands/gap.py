"""`perftriage gap`: sample one host's GPM counters (and its server log) for
S seconds and say where the time between the floor and the measured ms/token
goes.

``--json`` prints ``{floor_ms, measured_ms, gap, peak_gbs, dram_bw_gbs,
dram_busy_pct, useful_bw_gbs, traffic_ratio, idle_pct, gpus: [{index, name,
dram_bw_gbs, dram_busy_pct, sm_active_pct}], source, counter_quality, note,
engine_read_gbs, triage: {from, to, top, findings}, ...}``: bandwidths per GPU (mean over GPUs),
``engine_read_gbs`` the engine's own read estimate from the log (SGLang
``--enable-mfu-metrics``, vLLM's ``MFU:`` line), the third witness beside
achieved and useful; ``disagreement`` names two witnesses more than 1.5x
apart (``note`` says what that usually means), ``source`` one of ``nvml-gpm``,
``nvidia-smi-dmon``, ``unavailable``; null where there is no data. The gap
measures; ``triage`` is the triage of the same window (the one judge:
``perftriage triage`` reads the same rules), ``verdict`` / ``verdict_kind``
its top finding's line and cause, deprecated. Bad input exits 2, an
unreachable host 3.
"""

from __future__ import annotations

import asyncio
import math

import click

from perftriage.cli import EXIT_UNREACHABLE, UsageFailure
from perftriage.cli.json_out import json_text
from perftriage.core.analysis import roofline
from perftriage.core.sanitize import visible


def split_log_spec(spec: str) -> tuple[str | None, str]:
    """``[HOST:]PATH`` -> (host or None, path). A path never has a host part
    when it starts with ``/``, ``.`` or ``~``."""
    if spec.startswith(("/", ".", "~")) or ":" not in spec:
        return None, spec
    host, _, path = spec.partition(":")
    if not host or not path:
        raise UsageFailure(f"--log {spec!r}: expected [HOST:]PATH")
    return host, path


def _fmt(v, spec: str = ".1f", unit: str = "") -> str:
    return "n/a" if v is None else f"{format(v, spec)}{unit}"


def render_text(r: dict) -> str:
    lines = [
        f"source          {r['source']}" + (f" ({r['error']})" if r.get("error") else ""),
        f"floor           {_fmt(r['floor_ms'], '.3f', ' ms/token')}",
        f"measured        {_fmt(r['measured_ms'], '.3f', ' ' + r['ms_label'])}",
        f"gap             {_fmt(r['gap'], '.2f', 'x')}",
        f"peak            {_fmt(r['peak_gbs'], '.1f', ' GB/s per GPU')}",
        f"achieved DRAM   {_fmt(r['dram_bw_gbs'], '.1f', ' GB/s')} "
        f"({_fmt(r['dram_busy_pct'], '.1f', ' % busy')})",
        f"useful          {_fmt(r['useful_bw_gbs'], '.1f', ' GB/s')}",
        f"traffic ratio   {_fmt(r['traffic_ratio'], '.2f', 'x')} (achieved / useful)",
        f"engine estimate {_fmt(r.get('engine_read_gbs'), '.1f', ' GB/s')} (the engine's own read model)",
        f"DRAM idle       {_fmt(r['idle_pct'], '.1f', ' %')}",
    ]
    if r.get("nvlink_pct") is not None:
        lines.append(f"NVLink          {r['nvlink_pct']:.1f} % of capacity")
    for g in r["gpus"]:
        lines.append(f"  GPU{g['index']} {g['name']}  DRAM {_fmt(g['dram_bw_gbs'], '.0f', ' GB/s')}"
                     f" ({_fmt(g['dram_busy_pct'], '.0f', '%')})  SM {_fmt(g['sm_active_pct'], '.0f', '%')}")
    if r.get("note"):
        lines.append(f"counters        {r['counter_quality']}: {r['note']}")
    triage = r.get("triage") or {}
    findings = triage.get("findings") or []
    lines.append("triage          " + ("nothing found above 3 % of the time" if not findings
                                       else _finding(findings[0])))
    lines += [f"                {_finding(f)}" for f in findings[1:]]
    return "\n".join(lines)


def _finding(f: dict) -> str:
    share = "" if f.get("explains_pct") is None else f" · {f['explains_pct']:.0f} %"
    lead = "" if f.get("confirmed") else " (a lead)"
    return visible(f"{f['severity']} · {f['cause']}{share} · {f['title']}{lead}")


def _positive(name: str, value: float | None) -> None:
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise UsageFailure(f"{name} must be a number greater than 0, got {value:g}")


@click.command("gap")
@click.option("--host", "host_spec", metavar="SPEC",
              help="Host to sample (config name, ssh alias, user@host[:port]; default: -H, else localhost).")
@click.option("--weights-gb", type=float, metavar="GB", help="Weight bytes read per token step, GB.")
@click.option("--active-params-b", type=float, metavar="B",
              help="Active parameters per token, billions (MoE: only the active experts).")
@click.option("--bits", type=float, help="Bits per weight with --active-params-b.")
@click.option("--kv-gb", type=float, metavar="GB", help="KV-cache bytes read per step, GB.")
@click.option("--gpus", type=int, metavar="N", help="GPUs the weights are spread over (default: the host's).")
@click.option("--log", "log_spec", metavar="[HOST:]PATH",
              help="Server log to take tokens/s and the batch size from (SGLang or vLLM).")
@click.option("--seconds", type=float, default=5.0, show_default=True, metavar="S",
              help="How long to sample.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_obj
def command(g, host_spec, weights_gb, active_params_b, bits, kv_gb, gpus, log_spec, seconds,
            as_json) -> None:
    """Sample GPM bandwidth counters for S seconds and compare with the floor.

    \b
    perftriage gap --weights-gb 40 --log /var/log/sglang.log
    perftriage gap --host node1 --active-params-b 37 --bits 8 --gpus 8 --log node1:/srv/server.log --json
    """
    try:
        bytes_gb = roofline.bytes_per_step_gb(weights_gb, active_params_b, bits, kv_gb)
    except roofline.RooflineError as exc:
        raise UsageFailure(str(exc)) from None
    _positive("--seconds", seconds)
    if gpus is not None and gpus < 1:
        raise UsageFailure(f"--gpus must be a whole number of at least 1, got {gpus}")
    config = g.load_config()
    spec = host_spec or (g.hosts[0] if g.hosts else "localhost")
    log_host_spec, log_path = split_log_spec(log_spec) if log_spec else (None, None)
    saved = g.hosts
    g.hosts = [spec] + ([log_host_spec] if log_host_spec and log_host_spec != spec else [])
    try:
        registry = g.resolve_hosts(config)
    finally:
        g.hosts = saved
    host = registry.get(spec) if spec in registry.hosts else next(iter(registry.hosts.values()))
    log_host = registry.get(log_host_spec) if log_host_spec in registry.hosts else host

    async def main() -> dict:
        from perftriage.services.gap.measurement import measure

        try:
            r = await measure(host, bytes_gb=bytes_gb, seconds=seconds, n_gpus=gpus,
                              log_host=log_host if log_path else None, log_path=log_path)
            return r.public()
        finally:
            await registry.close()

    from perftriage.transport.base import TransportError

    try:
        result = asyncio.run(main())
    except FileNotFoundError as exc:
        raise UsageFailure(f"--log: {exc}") from None
    except TransportError as exc:
        click.echo(f"perftriage gap: {host.name}: {exc.reason}", err=True)
        raise SystemExit(EXIT_UNREACHABLE) from None
    if as_json:
        click.echo(json_text(result))
    else:
        click.echo(render_text(result))
