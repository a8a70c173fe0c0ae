"""`perftriage roofline`: the decode floor per token and the gap to it."""

from __future__ import annotations


import click

from perftriage.cli import UsageFailure
from perftriage.cli.json_out import json_text
from perftriage.core.analysis import roofline


@click.command("roofline")
@click.option("--weights-gb", type=float, metavar="GB",
              help="Weight bytes read per token step, GB (1e9 bytes).")
@click.option("--active-params-b", type=float, metavar="B",
              help="Active parameters per token, billions (MoE: only the active experts).")
@click.option("--bits", type=float, help="Bits per weight with --active-params-b (8 = FP8, 4 = FP4).")
@click.option("--kv-gb", type=float, metavar="GB", help="KV-cache bytes read per step, GB.")
@click.option("--gpus", type=int, default=1, show_default=True,
              help="GPUs the weights are spread over (tensor/expert parallel).")
@click.option("--bandwidth-gbs", type=float, metavar="GB/S", help="Per-GPU memory bandwidth.")
@click.option("--gpu", "gpu_name", metavar="NAME",
              help="Per-GPU bandwidth from the known table: "
                   + ", ".join(f"{k} ({v:g})" for k, v in roofline.KNOWN_GPUS.items()) + ".")
@click.option("--measured-ms", type=float, metavar="MS", help="Measured decode ms/token at batch 1.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def command(weights_gb, active_params_b, bits, kv_gb, gpus, bandwidth_gbs, gpu_name,
            measured_ms, as_json) -> None:
    """Compute the decode floor (bytes per token step / aggregate memory
    bandwidth), the ceiling in tokens/s and, with --measured-ms, the gap.

    \b
    perftriage roofline --weights-gb 46.08 --gpus 8 --bandwidth-gbs 1800 --measured-ms 97
    perftriage roofline --active-params-b 37 --bits 8 --kv-gb 2 --gpus 8 --gpu H200
    """
    try:
        r = roofline.compute(
            gpus=gpus, weights_gb=weights_gb, active_params_b=active_params_b, bits=bits,
            kv_gb=kv_gb, bandwidth_gbs=bandwidth_gbs, gpu=gpu_name, measured_ms=measured_ms,
        )
    except roofline.RooflineError as exc:
        raise UsageFailure(str(exc)) from None
    if as_json:
        click.echo(json_text(r.public()))
        return
    click.echo(f"bytes per token step  {r.bytes_gb:g} GB")
    click.echo(f"aggregate bandwidth   {r.bandwidth_gbs_total:g} GB/s ({gpus} GPU)")
    click.echo(f"floor                 {r.floor_ms:.3f} ms/token")
    click.echo(f"ceiling               {r.ceiling_tps:.1f} tokens/s per sequence "
               "(x the batch for the aggregate)")
    if r.measured_ms is not None:
        click.echo(f"measured              {r.measured_ms:g} ms/token")
        click.echo(f"gap                   {roofline.fmt_gap(r.gap)} (measured / floor)")
        click.echo(f"bandwidth efficiency  {r.efficiency_pct:.1f}% (floor / measured)")
