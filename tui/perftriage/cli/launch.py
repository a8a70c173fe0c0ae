"""Starting the cockpit from the command line (kept out of main.py so that
``--version`` and headless commands never import Textual)."""

from __future__ import annotations

import contextlib

import click

from perftriage.cli.globals import Globals


def build_cockpit(g: Globals, name: str = "session", *, config=None):
    """The cockpit of the global options: ``-H`` hosts beside localhost,
    ``--session NAME`` opened or continued, ``--hypotheses`` packs added.
    ``config`` replaces the config file (the demo's simulated server)."""
    from perftriage.services.investigation.hypotheses import add_hypotheses
    from perftriage.services.cockpit import Cockpit
    config = g.load_config() if config is None else config
    hypotheses = starting_hypotheses(g, config)  # a bad pack stops here: nothing started
    if g.prometheus:
        config.fleet.prometheus = g.prometheus
    if config.fleet.prometheus:
        from perftriage.cli.globals import UsageFailure
        from perftriage.transport.prometheus import normalize_url

        try:
            normalize_url(config.fleet.prometheus)
        except ValueError as exc:
            raise UsageFailure(f"--prometheus / [fleet] prometheus: {exc}") from None
    registry = g.resolve_hosts(config, with_localhost=True)  # -H hosts beside localhost
    session = None
    if g.session is not None:  # --session NAME: open or continue that investigation
        session = open_named(g, config, registry.names)
        name = g.session
    with sessions_dir_failure():
        cockpit = Cockpit(
            config,
            sessions_dir=g.resolved_sessions_dir(),
            registry=registry,
            session=session,
            name=name,
            sample_interval=g.sample_interval,
        )
    add_hypotheses(cockpit.session, hypotheses)
    return cockpit


def starting_hypotheses(g: Globals, config) -> list:
    """The config's ``[[hypotheses]]`` then each ``--hypotheses`` pack, vetted
    (a bad check: exit 2 with file:line and its position in the expression)."""
    from perftriage.cli.globals import UsageFailure
    from perftriage.core.checks import pack
    from perftriage.core.store.config import ConfigError

    out: list = []
    try:
        if config.hypotheses:
            path = g.resolved_config_path()
            out += pack.entries(config.hypotheses, path.read_text(encoding="utf-8"), path)
        for spec in g.hypotheses:
            out += pack.load(spec)
    except ConfigError as exc:
        raise UsageFailure(str(exc)) from None
    return out


@contextlib.contextmanager
def sessions_dir_failure():
    """A transcript that cannot be created is exit 2 with the directory, the
    reason and the way out, not a traceback."""
    from perftriage.cli.globals import UsageFailure
    from perftriage.core.store.transcript import TranscriptCreateError

    try:
        yield
    except TranscriptCreateError as exc:
        raise UsageFailure(f"{exc}; choose another directory with --sessions-dir DIR") from None


def open_named(g: Globals, config, hosts: list[str]):
    """The session of ``--session NAME`` (exit 2 with the reason when it
    cannot be opened: a bad name, another cockpit records it, a bad file)."""
    from perftriage.cli.globals import UsageFailure
    from perftriage.core.store import investigations, transcript
    from perftriage.services.investigation.named import open_investigation

    assert g.session is not None
    try:
        return open_investigation(g.session, g.resolved_sessions_dir(), hosts,
                                  log_ring=config.ui.log_ring_lines,
                                  redact=config.security.redact, defer_logs=True)
    except investigations.BadName as exc:
        raise UsageFailure(f"--session {investigations.shown_name(g.session)}: {exc}") from None
    except (investigations.Busy, transcript.TranscriptError, OSError) as exc:
        raise UsageFailure(str(exc)) from None


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
    from perftriage.cli.globals import UsageFailure
    from perftriage.core.clock import parse_time
    from perftriage.core.store import transcript
    from perftriage.services.investigation.replay import Replayer

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
    code, derived = run_over_player(g, replayer, options)
    if derived is not None:
        click.echo(f"additions saved to a derived session: {derived}", err=True)
    return code


def run_over_player(g: Globals, replayer, options: dict):
    """The app's panes over ``replayer``'s session, with no host; the exit
    code and what closing the player returned."""
    from perftriage.ui.app import PerftriageApp
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts.registry import HostRegistry

    cockpit = Cockpit(g.load_config(), registry=HostRegistry(), session=replayer.session)
    app = PerftriageApp(cockpit, **options)
    try:
        app.run()
    finally:
        closed = replayer.close()
    return app.return_code or 0, closed


def run_watcher(g: Globals, path) -> int:
    """``perftriage watch``: the player following ``path`` as it is written,
    read-only (no host, no probe, nothing written)."""
    from perftriage.cli.globals import UsageFailure
    from perftriage.core.store import transcript
    from perftriage.services.investigation.watch import Watcher

    options = app_options(g)
    try:
        watcher = Watcher(path)
    except (transcript.TranscriptError, OSError) as exc:
        raise UsageFailure(str(exc)) from None
    watcher.go_live()
    return run_over_player(g, watcher, options)[0]
