"""``perftriage kernels FILE.csv [--json] [--peak-gbs N]``: how far each
kernel is from its own roofline, from Nsight Compute's CSV (headless)."""

from __future__ import annotations

import sys

import click
import msgspec

from perftriage.cli.globals import UsageFailure


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
@click.option("--top", type=click.IntRange(min=1), default=None, metavar="N",
              help="Only the N biggest kernels (default: all with --json, 20 in the table).")
def command(file: str, as_json: bool, peak_gbs: float | None, gpu_name: str | None,
            must_read: tuple[str, ...], top: int | None) -> None:
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
    """
    from perftriage.core.profile.ncu import NcuInputError, parse_must_read, summarize_file
    from perftriage.core.profile.ncu_table import render

    try:
        summary = summarize_file(file, gpu=gpu_name, peak_gbs=peak_gbs,
                                 must_read=parse_must_read(list(must_read)))
    except NcuInputError as exc:
        raise UsageFailure(str(exc)) from None
    if as_json:
        sys.stdout.write(msgspec.json.encode(summary.top(top)).decode() + "\n")
    else:
        sys.stdout.write(render(summary, top if top is not None else 20) + "\n")
