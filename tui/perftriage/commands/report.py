"""`perftriage report SESSION [-o FILE]`: the investigation as Markdown."""

from __future__ import annotations

from pathlib import Path

import click
from perftriage.core.sanitize import visible

from perftriage.cli import UsageFailure
from perftriage.core.report import markdown as report
from perftriage.core.report.from_file import render_file
from perftriage.core.report.from_file import render_file
from perftriage.core.store import transcript


@click.command("report")
@click.argument("session", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write here ('-' for stdout). Default: next to SESSION, with .md.")
def command(session: Path, output: Path | None) -> None:
    """Write a Markdown report of SESSION (a transcript): hosts, the gap,
    hypotheses with their evidence, the probe timeline, notes and log events.
    A torn last line is reported on stderr and the report is still written."""
    problems: list = []
    try:
        text = render_file(session, problems)  # streamed: never all events in memory
    except (transcript.TranscriptError, OSError) as exc:
        raise UsageFailure(str(exc)) from None
    for problem in problems:
        click.echo(visible(f"warning: {session}: {problem}"), err=True)
    if output is not None and str(output) == "-":
        click.echo(text, nl=False)
        return
    out = output or report.default_output(session)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageFailure(f"cannot write {out}: {exc}") from None
    click.echo(str(out))
