"""`perftriage watch NAME`: follow an investigation while it is recorded."""

from __future__ import annotations

import sys

import click

from perftriage.cli.globals import UsageFailure


def resolve(g, name: str):
    """The transcript ``name`` designates (an investigation's name, a file
    name from `perftriage sessions`, or a path); exit 2 when there is none."""
    from perftriage.core.store import session_files

    directory = g.resolved_sessions_dir()
    found = session_files.resolve_session(name, directory)
    if found is None:
        raise UsageFailure(session_files.not_found(name, directory, what="investigation"))
    return found


@click.command("watch")
@click.argument("name")
@click.pass_obj
def command(g, name: str) -> None:
    """Watch investigation NAME as it is recorded, read-only: the player
    follows the transcript like tail -F (new runs included). Scrub back with
    , . < > t home and space; end returns to live. It never runs a probe,
    never connects to a host and never writes."""
    path = resolve(g, name)
    from perftriage.cli.launch import run_watcher

    sys.exit(run_watcher(g, path) or 0)
