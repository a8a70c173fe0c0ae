"""`perftriage check SESSION --pack FILE [--at T] [--json]`: a hypothesis
pack's checks evaluated against a saved session, after the fact.

The transcript is replayed through the reducer and, once a second of session
time, the same evaluator the cockpit runs live sets each check's verdict per
scope (GPU, host, engine). ``--json`` prints ``{hypotheses: [{title, check,
verdict, scopes: [{scope, verdict, value, reason}], spans: [{from, to, verdict}]}]}``:
``verdict`` at T (default: the end) over all scopes -- supported if any scope
supports it, the per-scope verdicts in ``scopes`` --, ``spans`` the verdict's
history in session seconds. Exit: 0; 2 on bad usage or a bad pack (file:line
and the position in the expression), or T outside the session.
"""

from __future__ import annotations

import sys

import click

from perftriage.cli import UsageFailure
from perftriage.cli.globals import warn_unreadable
from perftriage.cli.commands.replay import _resolve
from perftriage.cli.json_out import json_text
from perftriage.core.sanitize import visible


def _text(result: dict) -> str:
    lines = []
    for h in result["hypotheses"]:
        if not h["check"]:
            lines.append(f"  {'-':<10} {visible(h['title'])}  (no check)")
            continue
        counts: dict[str, int] = {}
        for s in h["scopes"]:
            counts[s["verdict"]] = counts.get(s["verdict"], 0) + 1
        where = ", ".join(f"{n} {v}" for v, n in counts.items()) if len(h["scopes"]) > 1 else ""
        lines.append(f"  {h['verdict'] or '-':<10} {visible(h['title'])}"
                     + (f"  [{where}]" if where else ""))
        lines.append(f"  {'':<10} check: {visible(h['check'])}")
        for s in h["scopes"][:8]:
            lines.append(f"  {'':<10}   {visible(s['scope'])}: {s['verdict']}  "
                         f"{visible(_read(s))}")
        flips = " -> ".join(f"{sp['verdict']} @{sp['from']:.0f}s" for sp in h["spans"][-6:])
        if flips:
            lines.append(f"  {'':<10}   history: {flips}")
    return "\n".join(lines)


def _read(scope: dict) -> str:
    """What the check read in one scope, in words: the values, or for no
    data what was missing (never a bare JSON null)."""
    value, reason = scope["value"], scope.get("reason") or ""
    if scope["verdict"] in ("no data", "error") or value is None:
        return reason or "nothing read yet"
    if isinstance(value, dict):
        return ", ".join(f"{k} = {json_text(v)}" for k, v in value.items())
    return json_text(value)


@click.command("check")
@click.argument("session", required=False)
@click.option("--pack", "packs", multiple=True, required=True, metavar="FILE|NAME",
              help="Hypothesis pack (TOML [[hypotheses]]), a file or a bundled pack's name. "
                   "Repeatable.")
@click.option("--at", "at", metavar="T",
              help="Verdicts at T: seconds (12.5), MM:SS, HH:MM:SS since the start, or 'end'.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@click.option("--latest", is_flag=True, help="The most recent session in the sessions dir.")
@click.pass_obj
def command(g, session: str | None, packs: tuple[str, ...], at: str | None, as_json: bool,
            latest: bool) -> None:
    """Evaluate a hypothesis pack's checks against a saved SESSION."""
    from perftriage.core.checks import offline, pack
    from perftriage.core.sanitize import visible
    from perftriage.core.clock import parse_time
    from perftriage.core.replay.timeline import new_state
    from perftriage.core.store import transcript
    from perftriage.core.store.config import ConfigError

    path = _resolve(g, session, latest)
    try:
        hyps = [h for spec in packs for h in pack.load(spec)]
    except ConfigError as exc:
        raise UsageFailure(str(exc)) from None
    for h in hyps:
        for note in h.notes:  # a check reading a deprecated signal: it still works
            click.echo(f"warning: {visible(h.title)}: {note}", err=True)
    try:
        t = parse_time(at or "end")
    except ValueError as exc:
        raise UsageFailure(f"--at {exc}") from None
    try:
        tr = transcript.read(path)
    except (transcript.TranscriptError, OSError) as exc:
        raise UsageFailure(str(exc)) from None
    if t is not None and not 0 <= t <= tr.duration_s:
        raise UsageFailure(f"--at {at}: the session lasts {tr.duration_s:.1f} s")
    warn_unreadable(path, tr.problems)
    state = new_state(tr.header, str(tr.header.get("name", path.stem)))
    result = offline.evaluate(tr.events, hyps, state, at=t)
    if as_json:
        sys.stdout.write(json_text(result, indent=2) + "\n")
    else:
        click.echo(f"{path.name}: {len(hyps)} hypotheses at "
                   f"{'the end' if t is None else f'{t:g} s'}")
        click.echo(_text(result))
