"""``perftriage profile [--host SPEC] --url URL [--steps N] [--json]``: capture
a profile from a running SGLang/vLLM server headless and print the same
summary as ``perftriage trace``."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import click

from perftriage.cli.globals import (
    EXIT_FAILED,
    EXIT_TIMEOUT,
    EXIT_UNREACHABLE,
    FiniteRange,
    Globals,
)


@click.command(name="profile")
@click.option("--host", metavar="SPEC",
              help="Host the server runs on (config name, ssh alias, user@host[:port]); "
                   "default localhost.")
@click.option("--url", required=True, metavar="URL",
              help="The server as that host sees it, e.g. http://127.0.0.1:30000.")
@click.option("--steps", type=click.IntRange(min=0), default=None, metavar="N",
              help="Forward steps to profile (SGLang num_steps; default: config, 5). "
                   "0: profile --seconds, then stop.")
@click.option("--seconds", type=FiniteRange(min=0.1), default=5.0, show_default=True,
              help="How long to profile without --steps (and always on vLLM).")
@click.option("--engine", type=click.Choice(["auto", "sglang", "vllm"]), default="auto",
              show_default=True)
@click.option("--trace-dir", metavar="DIR",
              help="vLLM: the server's trace directory (default: config [profile] vllm_trace_dir).")
@click.option("--ranks", type=click.IntRange(min=1, max=4096), default=None,
              help="Rank files to expect, 1..4096 (default: tp_size x pp_size from the "
                   "server, held to the same bounds).")
@click.option("--timeout", type=FiniteRange(min=1), default=None,
              help="Seconds to wait for every rank file (default: config, 120).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where to keep the trace files (default: <sessions dir>/profiles/<time>).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as one JSON object.")
@click.option("--top", type=click.IntRange(min=1), default=None, metavar="N")
@click.pass_obj
def command(g: Globals, host, url, steps, seconds, engine, trace_dir, ranks, timeout, out_dir,
            as_json, top) -> None:
    """Capture a profile from a running server and say which kernels eat the step.

    SGLang gets POST /start_profile with a fresh output_dir made by perftriage
    on the host and num_steps; vLLM needs --profiler-config on its side (a 404
    says so). The rank files are fetched over the host's SSH (SFTP) and kept
    in --out; where the host's sshd has no SFTP subsystem they are read over an
    exec channel by the host's python3 (the output says which). Nothing the
    server puts in that directory is followed: links, FIFOs and hard links
    are refused, and the directory is removed after every capture.
    Exit: 0 ok, 1 capture failed (idle server, profiling off, a refused
    directory, a /get_server_info out of bounds), 2 bad input, 3 unreachable
    or every rank file refused (named), 4 timeout.
    """
    from perftriage.cli.commands.trace import emit
    from perftriage.core.sanitize import visible
    from perftriage.services.profile.capture import (
        ALL_RANKS_REFUSED,
        CaptureFailed,
        CaptureRequest,
        capture,
        via_text,
    )
    from perftriage.transport.base import TIMEOUT, TransportError

    config, registry, name = g.one_host_for_url(host, url)
    pc = config.profile
    req = CaptureRequest(
        url=url, steps=pc.steps if steps is None else (steps or None), seconds=seconds,
        engine=engine, vllm_dir=trace_dir or pc.vllm_trace_dir, ranks=ranks,
        timeout=timeout or pc.timeout, rules=[(r.bucket, r.pattern) for r in pc.rules],
        max_trace_mb=pc.max_trace_mb)
    dest = out_dir or g.resolved_sessions_dir() / "profiles" / time.strftime("%Y%m%d-%H%M%S")

    def progress(msg: str) -> None:
        if not as_json:
            click.echo(f"· {visible(msg)}", err=True)  # remote file names: filtered

    async def main():
        try:
            return await capture(registry.get(name).transport, req, dest, progress)
        finally:
            await registry.close()

    try:
        result = asyncio.run(main())
    except CaptureFailed as exc:
        click.echo(f"perftriage profile: {name}: {visible(str(exc))}", err=True)
        code = {"timeout": EXIT_TIMEOUT, ALL_RANKS_REFUSED: EXIT_UNREACHABLE}.get(exc.kind,
                                                                                EXIT_FAILED)
        raise SystemExit(code) from None
    except TransportError as exc:
        click.echo(f"perftriage profile: {visible(str(exc))}", err=True)
        raise SystemExit(EXIT_TIMEOUT if exc.kind == TIMEOUT else EXIT_UNREACHABLE) from None
    for name, what in sorted(result.refused.items()):
        click.echo(f"perftriage profile: refused {visible(name)}: {what}, not a regular file",
                   err=True)
    if result.missing:
        click.echo(f"perftriage profile: ranks that wrote no trace within {req.timeout:g}s: "
                   f"{', '.join(result.missing)}", err=True)
    if not as_json:
        click.echo(f"{result.engine}: {len(result.files)} trace file(s) kept in {dest} "
                   f"(fetched {via_text(result.via, result.via_note)})", err=True)
    emit(result.summary, as_json, top, result.steps)
    sys.stdout.flush()
