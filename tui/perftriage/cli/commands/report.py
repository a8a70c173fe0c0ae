"""`perftriage report SESSION [-o FILE]`: the investigation as Markdown."""

from __future__ import annotations

from pathlib import Path

import os

import click

from perftriage.cli import UsageFailure
from perftriage.cli.globals import warn_unreadable
from perftriage.core.report import markdown as report
from perftriage.core.report.from_file import render_file
from perftriage.core.report.md_text import code
from perftriage.core.store import paths, session_files, transcript
from perftriage.core.store.redact import Redactor


@click.command("report")
@click.argument("session")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="Write here ('-' for stdout). Default: next to SESSION, with .md.")
@click.option("--summary", is_flag=True,
              help="Print only the summary (at most 20 lines to paste): the story, what is "
                   "left, the hosts, the span and where the full report is.")
@click.pass_obj
def command(g, session: str, output: Path | None, summary: bool) -> None:
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
    out = output or report.default_output(session_path)
    full = "stdout" if str(out) == "-" else code(os.fsencode(out).decode("utf-8",
                                                                        "backslashreplace"))
    try:
        # streamed: never all events in memory
        text = render_file(session_path, problems, redactor, summary_only=summary,
                           full_report=f"{code('perftriage report ' + session)} writes {full}"
                           if summary else "below")
    except (transcript.TranscriptError, OSError) as exc:
        raise UsageFailure(str(exc)) from None
    warn_unreadable(session_path, problems)
    if summary or (output is not None and str(output) == "-"):
        click.echo(text, nl=False)
        return
    try:
        paths.write_private(out, text)  # 0600: a report may still hold what redaction missed
    except OSError as exc:
        raise UsageFailure(f"cannot write {out}: {exc}") from None
    click.echo(str(out))
