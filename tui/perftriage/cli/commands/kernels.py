"""``perftriage kernels FILE.csv [--json] [--peak-gbs N]``: how far each
kernel is from its own roofline, from Nsight Compute's CSV (headless)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click
import msgspec

from perftriage.cli.globals import UsageFailure

if TYPE_CHECKING:
    from perftriage.core.profile.ncu import NcuSummary


@click.command(name="kernels")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--peak-gbs", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="N", help="Peak memory bandwidth per GPU, GB/s (default: from the GPU name).")
@click.option("--gpu", "gpu_name", metavar="NAME",
              help="The GPU the CSV was captured on (e.g. H200), for its datasheet peak.")
@click.option("--bytes", "must_read", multiple=True, metavar="KERNEL=N",
              help="Bytes a launch of KERNEL (a regex) must read, e.g. its weights; "
                   "repeatable. Shows how many times over it reads them.")
@click.option("--weights-gb", type=click.FloatRange(min=0, min_open=True), default=None, metavar="G",
              help="The roofline's weights: GB one decode step must read, all GPUs together. "
                   "Compares the step's GEMM + MoE DRAM reads against them (needs --steps).")
@click.option("--gpus", type=click.IntRange(min=1), default=None, metavar="N",
              help="GPUs the weights are split over (default 1); the CSV is one of them.")
@click.option("--steps", type=click.IntRange(min=1), default=None, metavar="N",
              help="How many decode steps the CSV holds (with --weights-gb).")
@click.option("--expert-gb", type=click.FloatRange(min=0, min_open=True), default=None, metavar="E",
              help="Of --weights-gb, the routed experts' GB per step: MoE kernels against E, "
                   "GEMMs against the rest.")
@click.option("--kv-gb", type=click.FloatRange(min=0, min_open=True), default=None, metavar="K",
              help="KV cache GB a step reads (all GPUs): attention kernels against it.")
@click.option("--top", type=click.IntRange(min=1), default=None, metavar="N",
              help="Only the N biggest kernels (default: all with --json, 20 in the table).")
def command(file: str, as_json: bool, peak_gbs: float | None, gpu_name: str | None,
            must_read: tuple[str, ...], weights_gb: float | None, gpus: int | None,
            steps: int | None, expert_gb: float | None, kv_gb: float | None,
            top: int | None) -> None:
    """Per kernel name: launches, total time, DRAM bytes read + written,
    achieved GB/s, % of the peak, ncu's DRAM and SM throughput %, and a
    verdict (near roofline, memory-bound below roofline, or not memory-bound:
    compute or latency).

    FILE is the output of this (the default page), read as a stream:

    \b
    ncu --clock-control none --csv --metrics
      dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,
      dram__throughput.avg.pct_of_peak_sustained_elapsed,
      sm__throughput.avg.pct_of_peak_sustained_elapsed COMMAND

    (the metrics as one comma-separated word). A file without the needed
    columns or metrics exits 2 naming what is missing.

    With the roofline's weights (--weights-gb G --steps N [--gpus N]
    [--expert-gb E] [--kv-gb K]) it says how many times over a decode step
    reads them: "1.0× the bytes it must" or "2.0× — it reads its weights
    twice".
    """
    from perftriage.core.profile.ncu import NcuInputError, parse_must_read, summarize_file
    from perftriage.core.profile.ncu_table import render

    try:
        summary = summarize_file(file, gpu=gpu_name, peak_gbs=peak_gbs,
                                 must_read=parse_must_read(list(must_read)))
    except NcuInputError as exc:
        raise UsageFailure(str(exc)) from None
    summary = _with_step_reads(summary, weights_gb, gpus, steps, expert_gb, kv_gb)
    if as_json:
        sys.stdout.write(msgspec.json.encode(summary.top(top)).decode() + "\n")
    else:
        sys.stdout.write(render(summary, top if top is not None else 20) + "\n")


def _with_step_reads(summary: NcuSummary, weights_gb: float | None, gpus: int | None,
                     steps: int | None, expert_gb: float | None,
                     kv_gb: float | None) -> NcuSummary:
    """The summary with ``step_reads`` filled from the roofline's weights;
    UsageFailure (exit 2) for an incomplete or inconsistent set of flags."""
    from perftriage.core.profile.ncu_step_read import StepReadError, step_reads

    if weights_gb is None:
        extra = [f for f, v in (("--gpus", gpus), ("--steps", steps), ("--expert-gb", expert_gb),
                                ("--kv-gb", kv_gb)) if v is not None]
        if extra:
            raise UsageFailure(f"{', '.join(extra)}: only with --weights-gb G "
                               "(the roofline's weights per decode step)")
        return summary
    if steps is None:
        raise UsageFailure("--weights-gb needs --steps N: how many decode steps the CSV holds "
                           "(ncu's CSV cannot say where a step ends)")
    try:
        rows = step_reads(summary.kernels, weights_gb=weights_gb, steps=steps, gpus=gpus or 1,
                          expert_gb=expert_gb, kv_gb=kv_gb)
    except StepReadError as exc:
        raise UsageFailure(str(exc)) from None
    return msgspec.structs.replace(summary, step_reads=rows)
