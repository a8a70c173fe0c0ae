"""`perftriage report SESSION [-o FILE]`: the investigation as Markdown."""

from __future__ import annotations

from pathlib import Path

import click

from perftriage.cli import UsageFailure
from perftriage.cli.globals import warn_unreadable
from perftriage.core.report import markdown as report
from perftriage.core.report.from_file import render_file
from perftriage.core.store import paths, session_files, transcript
from perftriage.core.store.redact import Redactor


@click.command("report")
@click.argument("session")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write here ('-' for stdout). Default: next to SESSION, with .md.")
@click.pass_obj
def command(g, session: str, output: Path | None) -> None:
    """Write a Markdown report of SESSION (a transcript file, a name as
    `perftriage sessions` prints it, or a bundled example): hosts, the gap,
    hypotheses with their evidence, the probe timeline, notes and log events.
    A torn last line is reported on stderr and the report is still written."""
    directory = g.resolved_sessions_dir()
    found = session_files.resolve_session(session, directory)
    if found is None:
        raise UsageFailure(session_files.not_found(session, directory))
    session_path = found
    redactor = Redactor(g.load_config().security.redact)
    problems: list = []
    try:
        text = render_file(session_path, problems, redactor)  # streamed: never all events in memory
    except (transcript.TranscriptError, OSError) as exc:
        raise UsageFailure(str(exc)) from None
    warn_unreadable(session_path, problems)
    if output is not None and str(output) == "-":
        click.echo(text, nl=False)
        return
    out = output or report.default_output(session_path)
    try:
        paths.write_private(out, text)  # 0600: a report may still hold what redaction missed
    except OSError as exc:
        raise UsageFailure(f"cannot write {out}: {exc}") from None
    click.echo(str(out))
