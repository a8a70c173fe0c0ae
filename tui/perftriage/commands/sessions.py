"""`perftriage sessions`: the saved transcripts, newest first."""

from __future__ import annotations

import click

from perftriage.core.store import transcript


def _row(path):
    try:
        tr = transcript.read(path)
    except (transcript.TranscriptError, OSError) as exc:
        return (path.name, "?", "?", "?", f"unreadable: {exc}")
    note = " (torn tail)" if tr.torn_tail else ""
    return (
        path.name,
        str(tr.header.get("started_at", "?")),
        f"{tr.duration_s:.0f}s",
        f"{len(tr.events)}{note}",
        ", ".join(tr.hosts),
    )


@click.command("sessions")
@click.pass_obj
def command(g) -> None:
    """List saved sessions: file, started, duration, events, hosts."""
    from rich.console import Console
    from rich.table import Table

    directory = g.resolved_sessions_dir()
    files = sorted(directory.glob(f"*{transcript.SUFFIX}"), reverse=True)
    console = Console()
    if not files:
        console.print(f"no sessions in {directory}")
        return
    table = Table(title=f"sessions in {directory}")
    for col in ("file", "started", "duration", "events", "hosts"):
        table.add_column(col)
    for path in files:
        table.add_row(*_row(path))
    console.print(table)
