"""`perftriage sessions`: the saved transcripts, newest first, listed from
each file's header and summary line (never by reading its events)."""

from __future__ import annotations

import sys

import click

from perftriage.cli.json_out import json_text
from perftriage.core.clock import clock
from perftriage.core.sanitize import visible
from perftriage.core.store import session_files


def _duration(s: float | None) -> str:
    return "?" if s is None else clock(s)


def _row(info: session_files.SessionInfo) -> tuple[str, ...]:
    """Printable cells: what comes out of a file is shown, never obeyed."""
    return tuple(visible(v) for v in _cells(info))


def _cells(info: session_files.SessionInfo) -> tuple[str, ...]:
    if info.error:
        return (info.name, "?", "?", "?", "?", "?", "?", "?", "?", f"unreadable: {info.error}")
    # no summary line yet: a live cockpit writes the file ("recording"), else a crash's "?"
    unknown = "recording" if info.recording else "?"

    def _number(n: int | None) -> str:
        return unknown if n is None else str(n)

    events = _number(info.events)
    if info.torn_tail:
        events += " (torn tail)"
    hyps = info.count("hypothesis.added")
    if hyps is not None:
        hyps = max(0, hyps - (info.count("hypothesis.deleted") or 0))
    return (info.name, str(info.segments), info.started_at or "?", info.last_activity or "?",
            _duration(info.duration_s) if info.duration_s is not None or not info.recording
            else unknown, events, _number(hyps),
            _number(info.count("note")), _number(info.count("probe.queued")),
            ", ".join(info.hosts or []))


COLUMNS = ("name", "segments", "started", "last activity", "duration", "events",
           "hypotheses", "notes", "probes", "hosts")


@click.command("sessions")
@click.option("--json", "as_json", is_flag=True, help="One JSON list of objects.")
@click.pass_obj
def command(g, as_json: bool) -> None:
    """List investigations and saved sessions, the latest activity first:
    name (a named investigation's name, else the file's: what `perftriage
    replay NAME`, `report NAME` and `watch NAME` take), segments (runs),
    started, last activity, duration, events and counts, hosts. Counts are
    'recording' for an investigation a cockpit records now, '?' for a file
    without a summary (a run that crashed)."""
    directory = g.resolved_sessions_dir()
    infos = [session_files.describe(p) for p in session_files.session_files(directory)]
    infos.sort(key=lambda i: i.last_activity or "", reverse=True)  # the latest work first
    if as_json:
        click.echo(json_text([i.to_json() for i in infos], indent=2))
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
    table.add_column("name", no_wrap=True, overflow="fold")
    for col in COLUMNS[1:]:
        table.add_column(col)
    for r in rows:
        table.add_row(*(Text(v) for v in r))  # no markup from file contents
    Console().print(table)
    _mention_titles(infos)
    _mention_examples()


def _mention_titles(infos: list[session_files.SessionInfo]) -> None:
    """An unnamed session is also reached by the title the cockpit showed
    (``demo``): the newest file of that title."""
    newest: dict[str, str] = {}
    for i in infos:  # latest activity first
        m = session_files.STAMPED.match(i.name)
        if m and m.group("name") not in newest:
            newest[m.group("name")] = i.name
    for title, name in sorted(newest.items()):
        click.echo(visible(f"{title}: the newest is {name} (replay, report, compare and "
                           f"triage take `{title}`)"))


def _mention_examples() -> None:
    """The bundled example sessions, replayable by name from anywhere (not
    in a pipe that lists sessions: its rows stay rows)."""
    names = sorted(p.stem for p in session_files.bundled_sessions_dir().glob("*.jsonl"))
    if names:
        click.echo(f"bundled example{'s' if len(names) > 1 else ''}: "
                   + ", ".join(f"perftriage replay {n}" for n in names))
