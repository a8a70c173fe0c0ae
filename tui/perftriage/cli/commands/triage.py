"""``perftriage triage``: what is wrong, phase by phase, with what it costs.

On a recording: ``perftriage triage SESSION[@FROM-TO|#N] [--json]`` (the
slice syntax of ``compare``). Live: ``perftriage triage --host H --url URL
[--seconds N] [--allow-capture] [--json]`` watches the host's GPUs, the
engine's ``/metrics`` and the server log (``--log``) for N seconds, takes a
stacks record of the engine, a profile capture only with
``--allow-capture`` (a capture pauses an eager server for seconds), and
triages what it saw. JSON: ``{label, from, to, hosts, phases: [{from, to,
findings}]}``, findings ordered by the share of the time they explain.
Exit 2 on a bad slice (named), 3 when the host cannot be reached.
"""

from __future__ import annotations

import sys

import click

from perftriage.cli.globals import FiniteRange, UsageFailure, warn_unreadable
from perftriage.cli.json_out import json_text


def _recorded(g, slice_text: str):
    from perftriage.cli.commands.compare import _spec
    from perftriage.core.compare.load import load
    from perftriage.core.compare.slices import SliceError, shown, window
    from perftriage.core.store import transcript

    spec, path = _spec(g, slice_text, "triage")
    problems: list = []
    try:
        rec = load(path, problems)
    except (transcript.TranscriptError, OSError) as exc:
        raise UsageFailure(f"{shown(slice_text)}: {shown(str(exc), 300)}") from None
    warn_unreadable(path, problems)
    try:
        w = window(spec, rec.segments, rec.duration)
    except SliceError as exc:
        raise UsageFailure(str(exc)) from None
    return rec, w


def _emit(label: str, start: float, end: float, phases: list, hosts: list[str], as_json: bool,
          notes: list[str] | None = None):
    """``notes``: hosts of one machine, said once below the text."""
    from perftriage.core.sanitize import visible
    from perftriage.core.view.triage_text import result_json, text

    if as_json:
        data = result_json(label, start, end, hosts, phases)
        sys.stdout.write(json_text(data, indent=2) + "\n")
    else:
        sys.stdout.write(text(label, phases))
        if notes:
            sys.stdout.write("\n" + "".join(f"note: {visible(n)}\n" for n in notes))


@click.command("triage")
@click.argument("slice_text", metavar="SESSION[@FROM-TO|#N]", required=False)
@click.option("--host", metavar="HOST", help="Live: the host the server runs on.")
@click.option("--url", metavar="URL", help="Live: the engine's base URL (http://127.0.0.1:30000).")
@click.option("--log", "log_path", metavar="PATH", help="Live: the server's log on that host.")
@click.option("--seconds", type=FiniteRange(min=1, max=3600), default=20.0,
              show_default=True, help="Live: how long to watch.")
@click.option("--allow-capture", is_flag=True,
              help="Live: take a profile capture too (pauses an eager server for seconds).")
@click.option("--json", "as_json", is_flag=True, help="Print the triage as one JSON object.")
@click.pass_obj
def command(g, slice_text: str | None, host: str | None, url: str | None, log_path: str | None,
            seconds: float, allow_capture: bool, as_json: bool) -> None:
    """What is wrong, phase by phase: each finding with the share of the time
    it explains, its evidence, the next witness to take and the fix.

    On a recording: SESSION (an investigation or transcript), SESSION#N (its
    run N) or SESSION@FROM-TO (session time as SS, MM:SS or H:MM:SS). Live:
    --host H --url URL [--log PATH] [--seconds N] [--allow-capture]."""
    if slice_text is not None:
        if host or url or log_path or allow_capture:
            raise UsageFailure("give a recording (SESSION[@FROM-TO|#N]) or --host/--url, not both")
        from perftriage.core.triage import same_machine
        from perftriage.core.triage.phases import triage
        from perftriage.core.triage.witnesses import hosts_of

        rec, w = _recorded(g, slice_text)
        # one machine under several names: one host, named as the cockpit names it
        same = same_machine.aliases(rec.gpu_uuids)
        notes = same_machine.said(same, rec.gpu_uuids)
        rec = same_machine.joined(rec, same)
        _emit(w.label, w.start, w.end, triage(rec, w.start, w.end), hosts_of(rec), as_json, notes)
        return
    if not host or not url:
        raise UsageFailure("give a recording (SESSION[@FROM-TO|#N]), or --host H --url URL "
                           "to triage a live server")
    from perftriage.cli.commands.triage_live import watch

    phases, duration = watch(g, host, url, log_path, seconds, allow_capture)
    _emit(f"{host} live {seconds:g} s", 0.0, duration, phases, [host], as_json)
