"""``perftriage trace FILE... [--json] [--top N] [--steps N] [--session NAME]``: which kernels eat the step,
from torch.profiler / Kineto traces (one file per rank) or an nsys
``cuda_gpu_kern_sum`` CSV (headless, no Textual)."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from pathlib import Path

import click

from perftriage.cli.globals import Globals, UsageFailure
from perftriage.cli.json_out import msgspec_json_text
from perftriage.core.profile.buckets import RuleError
from perftriage.core.profile.model import ProfileSummary, TraceError
from perftriage.core.profile.reader import DEFAULT_MAX_MB, TraceLimits


def user_rules(g: Globals | None) -> list[tuple[str, str]]:
    """The config's ``[[profile.rules]]`` as (bucket, pattern) pairs."""
    if g is None:
        return []
    return [(r.bucket, r.pattern) for r in g.load_config().profile.rules]


def trace_limits(g: Globals | None, max_mb: int | None) -> TraceLimits:
    """``--max-trace-mb``, else the config's ``[profile] max_trace_mb``."""
    if max_mb is None:
        max_mb = g.load_config().profile.max_trace_mb if g is not None else DEFAULT_MAX_MB
    return TraceLimits(max_mb=max_mb)


def emit(summary: ProfileSummary, as_json: bool, top: int | None,
         steps: int | None = None) -> None:
    from perftriage.core.profile.table import render

    if as_json:
        sys.stdout.write(msgspec_json_text(summary.top(top)) + "\n")
    else:
        sys.stdout.write(render(summary, top if top is not None else 20, steps) + "\n")


@click.command(name="trace")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--top", type=click.IntRange(min=1), default=None, metavar="N",
              help="Only the N biggest kernels (default: all with --json, 20 in the table).")
@click.option("--max-trace-mb", "max_mb", type=click.IntRange(1, 1 << 20), default=None,
              metavar="MIB", help="Refuse a file larger than this, on disk or once "
              f"decompressed (default: [profile] max_trace_mb, {DEFAULT_MAX_MB}).")
@click.option("--steps", type=click.IntRange(min=1), default=None, metavar="N",
              help="The decode steps the traces hold: the headline also gives per-step figures.")
@click.option("--session", "session", metavar="NAME",
              help="Also bring the files into the investigation NAME as a capture "
                   "(copied next to its transcript; its Profile view shows it).")
@click.pass_context
def command(ctx: click.Context, files: tuple[str, ...], as_json: bool, top: int | None,
            max_mb: int | None, steps: int | None, session: str | None) -> None:
    """Summarise profiler traces: each kernel's total ms, calls, mean µs, share
    of all kernel time and spread over ranks; kernels in buckets
    (communication, moe, attention, gemm, memcpy/memset, elementwise/norm,
    other; extend with [[profile.rules]] in the config); GPU idle share of
    the capture window and exposed communication.

    FILE is a torch.profiler / Kineto Chrome trace (.json or .json.gz, one
    per rank) or an nsys `cuda_gpu_kern_sum` CSV. A file that cannot be read
    (missing, not a regular file, over --max-trace-mb, truncated, not a trace)
    exits 2 naming it, and so does one with no GPU kernel (a CPU-only or
    MTIA trace). Files that cannot be ranks of one job exit 2 naming them
    and why: one file given twice, different world sizes or GPUs
    (distributedInfo, deviceProperties), two files claiming the same rank
    (TP-0 of an eager and of a CUDA-graph capture), ranks of a distributed
    job whose windows never overlap. Ranks are labelled by the rank each
    trace says it is (distributedInfo), not by the order of the files.
    """
    from perftriage.core.profile.rank import repeated_ranks
    from perftriage.core.profile.summarize import summarize_files
    from perftriage.core.profile.trace_meta import same_file
    from perftriage.core.sanitize import visible

    g = ctx.find_object(Globals)
    twice = same_file(list(files))
    if twice is not None:
        raise UsageFailure(visible(twice))
    repeated = repeated_ranks(list(files))
    if repeated:
        label, same = next(iter(repeated.items()))
        raise UsageFailure(visible(
            f"{len(same)} files claim rank {label} ({', '.join(same)}): they come from "
            "different captures (eager and CUDA graph?); trace each capture on its own"))
    try:
        summary = summarize_files(list(files), user_rules(g), trace_limits(g, max_mb))
    except (TraceError, RuleError) as exc:
        raise UsageFailure(visible(str(exc))) from None
    emit(summary, as_json, top, steps)
    name = session or (g.session if g is not None else None)  # -s NAME after the command
    if name:
        import_into(g or Globals(), name, [Path(f) for f in files])


@contextlib.contextmanager
def recording_into(g: Globals, name: str, what: str):
    """The investigation ``name`` opened for a headless command to add to (a
    new one, or continued; exit 2 while a cockpit records it), closed after."""
    from perftriage.cli.launch import open_named

    config = g.load_config()
    named = open_named(dataclasses.replace(g, session=name), config, ["localhost"])
    try:
        yield named, config
    finally:
        named.close(what)


def import_into(g: Globals, name: str, paths: list[Path]) -> None:
    """The files as a capture of the investigation ``name``, like the
    palette's ``profile: import FILE…``."""
    import asyncio

    from perftriage.services.hosts.registry import HostRegistry
    from perftriage.services.profile.captures import ProfileCaptures

    with recording_into(g, name, "trace import") as (named, config):
        try:
            cap = asyncio.run(ProfileCaptures(named, HostRegistry(), config).import_files(paths))
        except (TraceError, OSError) as exc:
            raise UsageFailure(str(exc)) from None
        click.echo(f"imported as {cap.capture_id} into {name!r} ({named.path})", err=True)
