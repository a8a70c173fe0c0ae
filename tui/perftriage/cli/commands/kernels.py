"""``perftriage kernels FILE.csv... [--json] [--peak-gbs N]``: how far each
kernel is from its own roofline, from Nsight Compute's CSV (headless).
Several files give one table each (each CSV is its own capture: an eager
and a CUDA-graph run, two GPUs), never summed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
import msgspec

from perftriage.cli.globals import Globals, UsageFailure
from perftriage.cli.json_out import msgspec_json_text

if TYPE_CHECKING:
    from perftriage.core.profile.ncu import NcuSummary


class _PositiveNumber(click.ParamType):
    """A finite number > 0 (click's FloatRange lets ``nan`` and ``inf`` through)."""

    name = "number"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        import math

        try:
            number = float(str(value))
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or number <= 0:
            self.fail(f"{str(value)[:40]!r}: give a finite number > 0", param, ctx)
        return number


POSITIVE = _PositiveNumber()


@click.command(name="kernels")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--peak-gbs", type=POSITIVE, default=None,
              metavar="N", help="Peak memory bandwidth per GPU, GB/s (default: from the GPU name).")
@click.option("--gpu", "gpu_name", metavar="NAME",
              help="The GPU the CSV was captured on (e.g. H200), for its datasheet peak.")
@click.option("--bytes", "must_read", multiple=True, metavar="KERNEL=N",
              help="Bytes a launch of KERNEL (a regex) must read, e.g. its weights; "
                   "repeatable. Shows how many times over it reads them.")
@click.option("--weights-gb", type=POSITIVE, default=None, metavar="G",
              help="The roofline's weights: GB one decode step must read, all GPUs together. "
                   "Compares the step's GEMM + MoE DRAM reads against them (needs --steps).")
@click.option("--gpus", type=click.IntRange(min=1), default=None, metavar="N",
              help="GPUs the weights are split over (default 1); the CSV is one of them.")
@click.option("--steps", type=click.IntRange(min=1), default=None, metavar="N",
              help="How many decode steps the CSV holds (with --weights-gb).")
@click.option("--expert-gb", type=POSITIVE, default=None, metavar="E",
              help="Of --weights-gb, the routed experts' GB per step: MoE kernels against E, "
                   "GEMMs against the rest.")
@click.option("--kv-gb", type=POSITIVE, default=None, metavar="K",
              help="KV cache GB a step reads (all GPUs): attention kernels against it.")
@click.option("--top", type=click.IntRange(min=1), default=None, metavar="N",
              help="Only the N biggest kernels (default: all with --json, 20 in the table).")
@click.option("--session", "session", metavar="NAME",
              help="Also bring the CSV into the investigation NAME as an ncu result (its "
                   "Profile view joins the kernels; the triage reads it).")
@click.pass_context
def command(ctx: click.Context, files: tuple[str, ...], as_json: bool, peak_gbs: float | None,
            gpu_name: str | None, must_read: tuple[str, ...], weights_gb: float | None,
            gpus: int | None, steps: int | None, expert_gb: float | None, kv_gb: float | None,
            top: int | None, session: str | None) -> None:
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
    columns or metrics exits 2 naming what is missing; so does a --gpu the
    datasheet table does not know (unless --peak-gbs gives the peak).

    Several files give one table each, headed by the file's name (each CSV
    is its own capture; nothing is summed across them); with --json, one
    object for one file, else a list of them, each with its "file".

    With the roofline's weights (--weights-gb G --steps N [--gpus N]
    [--expert-gb E] [--kv-gb K]) it says how many times over a decode step
    reads them: "1.0× the bytes it must" or "2.0× — it reads its weights
    twice".
    """
    from perftriage.core import gpus as gpu_table
    from perftriage.core.profile.ncu import NcuInputError, parse_must_read, summarize_file
    from perftriage.core.profile.ncu_table import render
    from perftriage.core.sanitize import visible

    if gpu_name and peak_gbs is None and gpu_table.find(gpu_name) is None:
        raise UsageFailure(visible(f"--gpu: {gpu_table.unknown_text(gpu_name)} "
                                   "(or give --peak-gbs)"))
    try:
        patterns = parse_must_read(list(must_read))
        summaries = [summarize_file(f, gpu=gpu_name, peak_gbs=peak_gbs, must_read=patterns)
                     for f in files]
    except NcuInputError as exc:
        raise UsageFailure(str(exc)) from None
    summaries = [_with_step_reads(s, weights_gb, gpus, steps, expert_gb, kv_gb)
                 for s in summaries]
    g = ctx.find_object(Globals)
    name = session or (g.session if g is not None else None)  # -s NAME after the command
    if name:
        _import_into(g or Globals(), name, files, gpu_name, peak_gbs)
    for spec, (pattern, _) in zip(must_read, patterns):
        if not any(pattern.search(k.name) for s in summaries for k in s.kernels):
            click.echo(visible(f"warning: --bytes {spec!r}: no kernel name matches "
                               f"{pattern.pattern!r}; it is ignored"), err=True)
    if as_json:
        docs = [msgspec.to_builtins(s.top(top)) for s in summaries]
        out = docs[0] if len(files) == 1 else [{**d, "file": f} for d, f in zip(docs, files)]
        sys.stdout.write(msgspec_json_text(out) + "\n")
        return
    tables = [render(s, top if top is not None else 20) for s in summaries]
    if len(files) > 1:
        tables = [f"== {visible(f)} ==\n{t}" for f, t in zip(files, tables)]
    sys.stdout.write("\n\n".join(tables) + "\n")


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


def _import_into(g: Globals, name: str, files: tuple[str, ...], gpu: str | None,
                 peak_gbs: float | None) -> None:
    """Each CSV as an ncu result of the investigation ``name``."""
    from perftriage.cli.commands.trace import recording_into
    from perftriage.core.profile.ncu import NcuInputError
    from perftriage.services.profile.ncu_import import import_ncu_csv

    with recording_into(g, name, "ncu import") as (named, _config):
        for f in files:
            try:
                probe_id, _ = import_ncu_csv(named, Path(f), gpu=gpu, peak_gbs=peak_gbs)
            except NcuInputError as exc:
                raise UsageFailure(str(exc)) from None
            click.echo(f"imported {f} as {probe_id} into {name!r} ({named.path})", err=True)
