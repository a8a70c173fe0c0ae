"""Starting the cockpit from the command line (kept out of main.py so that
``--version`` and headless commands never import Textual)."""

from __future__ import annotations

import click

from perftriage.cli.globals import Globals


def build_cockpit(g: Globals, name: str = "session"):
    from perftriage.services.cockpit import Cockpit
    config = g.load_config()
    if g.prometheus:
        config.fleet.prometheus = g.prometheus
    if config.fleet.prometheus:
        from perftriage.cli.globals import UsageFailure
        from perftriage.services.prometheus import normalize_url

        try:
            normalize_url(config.fleet.prometheus)
        except ValueError as exc:
            raise UsageFailure(f"--prometheus / [fleet] prometheus: {exc}") from None
    registry = g.resolve_hosts(config, with_localhost=True)  # -H hosts beside localhost
    cockpit = Cockpit(
        config,
        sessions_dir=g.resolved_sessions_dir(),
        registry=registry,
        name=name,
        sample_interval=g.sample_interval,
    )
    return cockpit


def run_cockpit(g: Globals) -> int:
    from perftriage.ui.app import PerftriageApp

    options = app_options(g)  # before the cockpit: a bad --theme starts nothing
    cockpit = build_cockpit(g)
    app = PerftriageApp(cockpit, **options)
    app.run()
    if cockpit.session.path:
        click.echo(f"transcript: {cockpit.session.path}", err=True)
    return app.return_code or 0


def app_options(g: Globals) -> dict:
    """``PerftriageApp`` keyword arguments from the global options: the
    ``--theme`` (unknown name: exit 2 listing the known ones) and the config
    file UI choices are saved into."""
    from perftriage.cli.globals import UsageFailure
    from perftriage.ui.theming import load_catalog, unknown_theme_message

    if g.theme:
        names = load_catalog().names()
        if g.theme not in names:
            raise UsageFailure(unknown_theme_message(g.theme, names))
    return {"theme": g.theme, "config_path": g.resolved_config_path()}


def run_player(g: Globals, path, *, at: str | None = None, speed: float = 1.0,
               idle_limit: float | None = None) -> int:
    """``perftriage replay``: the cockpit's panes over a player of ``path``."""
    from perftriage.ui.app import PerftriageApp
    from perftriage.cli.globals import UsageFailure
    from perftriage.core.replay.state_at import parse_time
    from perftriage.core.store import transcript
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts import HostRegistry
    from perftriage.services.replay import Replayer

    try:
        t = parse_time(at) if at else 0.0
    except ValueError as exc:
        raise UsageFailure(f"--at {exc}") from None
    options = app_options(g)
    try:
        replayer = Replayer(path, sessions_dir=g.resolved_sessions_dir(), speed=speed,
                            idle_limit=idle_limit)
    except (transcript.TranscriptError, OSError) as exc:
        raise UsageFailure(str(exc)) from None
    end = replayer.expected_duration
    if t is not None and (t < 0 or (end is not None and t > end)):
        raise UsageFailure(f"--at {at}: outside the session (0 to {end or 0:.3f}s)")
    if t is None:
        replayer.timeline.scan()
        replayer.player.seek(len(replayer.timeline))
    else:
        replayer.player.seek_time(t)
    replayer.start_indexing()
    cockpit = Cockpit(g.load_config(), registry=HostRegistry(), session=replayer.session)
    app = PerftriageApp(cockpit, **options)
    try:
        app.run()
    finally:
        derived = replayer.close()
    if derived is not None:
        click.echo(f"additions saved to a derived session: {derived}", err=True)
    return app.return_code or 0
