"""`perftriage sessions`: the saved transcripts, newest first, listed from
each file's header and summary line (never by reading its events)."""

from __future__ import annotations

import json
import sys

import click

from perftriage.core.report.markdown import clock
from perftriage.core.sanitize import visible
from perftriage.core.store import session_files


def _duration(s: float | None) -> str:
    return "?" if s is None else clock(s)


def _row(info: session_files.SessionInfo) -> tuple[str, ...]:
    """Printable cells: what comes out of a file is shown, never obeyed."""
    return tuple(visible(v) for v in _cells(info))


def _cells(info: session_files.SessionInfo) -> tuple[str, ...]:
    if info.error:
        return (info.name, "?", "?", "?", f"unreadable: {info.error}")
    events = "?" if info.events is None else str(info.events)
    if info.torn_tail:
        events += " (torn tail)"
    return (info.name, info.started_at or "?", _duration(info.duration_s), events,
            ", ".join(info.hosts or []))


COLUMNS = ("file", "started", "duration", "events", "hosts")


@click.command("sessions")
@click.option("--json", "as_json", is_flag=True, help="One JSON list of objects.")
@click.pass_obj
def command(g, as_json: bool) -> None:
    """List saved sessions: file, started, duration, events, hosts. The file
    name is what `perftriage replay NAME` takes; events is '?' for a file
    without a summary (crashed or written elsewhere)."""
    directory = g.resolved_sessions_dir()
    infos = [session_files.describe(p) for p in session_files.session_files(directory)]
    if as_json:
        click.echo(json.dumps([i.to_json() for i in infos], indent=2))
        return
    if not infos:
        click.echo(f"no sessions in {directory}")
        _mention_examples()
        return
    rows = [_row(i) for i in infos]
    if not sys.stdout.isatty():
        # whole names, one line per session, columns padded: for scripts and pipes
        widths = [max(len(r[c]) for r in [COLUMNS, *rows]) for c in range(len(COLUMNS) - 1)]
        for r in [COLUMNS, *rows]:
            click.echo("  ".join([*(v.ljust(w) for v, w in zip(r, widths)), r[-1]]).rstrip())
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"sessions in {directory}")
    table.add_column("file", no_wrap=True, overflow="fold")
    for col in COLUMNS[1:]:
        table.add_column(col)
    for r in rows:
        table.add_row(*(Text(v) for v in r))  # no markup from file contents
    Console().print(table)
    _mention_examples()


def _mention_examples() -> None:
    """The bundled example sessions, replayable by name from anywhere (not
    in a pipe that lists sessions: its rows stay rows)."""
    names = sorted(p.stem for p in session_files.bundled_sessions_dir().glob("*.jsonl"))
    if names:
        click.echo(f"bundled example{'s' if len(names) > 1 else ''}: "
                   + ", ".join(f"perftriage replay {n}" for n in names))
