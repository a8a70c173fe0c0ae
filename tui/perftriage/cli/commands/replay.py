"""`perftriage replay SESSION`: the saved session as a player, or the state
at one moment headless (``--at T --json``)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from perftriage.cli.globals import FiniteRange

from perftriage.cli import UsageFailure
from perftriage.cli.globals import warn_unreadable
from perftriage.cli.json_out import json_text
from perftriage.core.store import transcript


def _resolve(g, session: str | None, latest: bool) -> Path:
    from perftriage.core.store import session_files

    directory = g.resolved_sessions_dir()
    if latest:
        if session:
            raise UsageFailure("give SESSION or --latest, not both")
        found = session_files.latest(directory)
        if found is None:
            raise UsageFailure(f"no sessions in {directory}")
        return found
    if not session:
        raise UsageFailure("missing SESSION (a file, a name as `perftriage sessions` prints it, "
                           "or --latest)")
    found = session_files.resolve_session(session, directory)
    if found is None:
        raise UsageFailure(session_files.not_found(session, directory))
    return found


def _phases(path: Path) -> list:
    """The recording's triage for a transcript made before the live triage
    (no ``triage.updated`` in it): its phases are what ``perftriage
    triage``, the report and the player say (core/triage/at.py's
    ``told_in``: one rule)."""
    from perftriage.core.compare.load import load
    from perftriage.core.triage.at import told_in
    from perftriage.core.triage.phases import triage

    if told_in(path):
        return []

    return triage(load(path, []))


def _print_state_at(path: Path, at: str | None) -> None:
    from perftriage.core.clock import parse_time
    from perftriage.core.replay.state_at import TimeOutOfRange, state_at, state_json

    try:
        t = parse_time(at or "end")
    except ValueError as exc:
        raise UsageFailure(f"--at {exc}") from None
    problems: list = []
    try:
        state, last_t = state_at(path, t, problems)
    except TimeOutOfRange as exc:
        raise UsageFailure(str(exc)) from None
    except (transcript.TranscriptError, OSError) as exc:
        raise UsageFailure(str(exc)) from None
    warn_unreadable(path, problems)
    from perftriage.core.replay.state_at import live_gaps_json
    from perftriage.core.triage.at import triage_at_json

    out = state_json(state, last_t if t is None else t)
    # the live gap per host at T (``gaps`` is the recorded roofline, the same at every T)
    out["live_gaps"] = live_gaps_json(state.gap_samples, out["t"])
    out["triage"] = triage_at_json(state.triage, _phases(path), out["t"])
    sys.stdout.write(json_text(out, indent=2) + "\n")


@click.command("replay")
@click.argument("session", required=False)
@click.option("--latest", is_flag=True, help="The most recent session in the sessions dir.")
@click.option("--at", "at", metavar="T",
              help="Start at T: seconds (12.5), MM:SS, HH:MM:SS since the start, or 'end'.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the state at T (default: end) as JSON; no UI.")
@click.option("--speed", type=FiniteRange(0.25, 64), default=1.0, show_default=True,
              help="Playback speed, 0.25 to 64.")
@click.option("--idle-limit", type=FiniteRange(min=0, min_open=True), metavar="S",
              help="Play quiet gaps longer than S seconds as S seconds.")
@click.pass_obj
def command(g, session: str | None, latest: bool, at: str | None, as_json: bool,
            speed: float, idle_limit: float | None) -> None:
    """Replay SESSION (a file, or a name from `perftriage sessions`) as a
    player, read-only. With --json, print the state at --at T and exit
    (exit 2 when T is outside the session)."""
    path = _resolve(g, session, latest)
    if as_json:
        _print_state_at(path, at)
        return
    from perftriage.cli.launch import run_player

    sys.exit(run_player(g, path, at=at, speed=speed, idle_limit=idle_limit) or 0)

