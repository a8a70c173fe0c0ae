"""`perftriage replay SESSION`: the saved session in the same panes."""

from __future__ import annotations

from pathlib import Path

import click

from perftriage.core.store import transcript


@click.command("replay")
@click.argument("session", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_obj
def command(g, session: Path) -> None:
    """Open SESSION (a transcript file) in the cockpit, read-only."""
    from perftriage.app import PerftriageApp
    from perftriage.launch import app_options
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts import HostRegistry
    from perftriage.services.session import Session

    try:
        replayed, tr = Session.from_transcript(session)
    except transcript.TranscriptError as exc:
        raise click.ClickException(str(exc)) from None
    for problem in tr.problems:
        click.echo(f"warning: {session}: {problem}", err=True)
    options = app_options(g)
    cockpit = Cockpit(g.load_config(), registry=HostRegistry(), session=replayed)
    PerftriageApp(cockpit, **options).run()
