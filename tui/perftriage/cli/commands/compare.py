"""``perftriage compare A B [--json] [--min-effect PCT]``: did the change help?

A and B each name a slice of a recording: ``NAME`` (a whole investigation),
``NAME#N`` (its run N), ``NAME@FROM-TO`` (session time), or a transcript path
with the same suffixes. Headless; exit 2 on a slice that cannot be read,
lies outside its session or holds no readings."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from perftriage.cli.globals import FiniteRange, UsageFailure, warn_unreadable
from perftriage.cli.json_out import json_text


def _spec(g, text: str, which: str):
    """(the slice's parts, its transcript's path), or exit 2."""
    from perftriage.core.compare.slices import SliceError, parse_slice, shown
    from perftriage.core.store import session_files

    directory = g.resolved_sessions_dir()

    def exists(name: str) -> bool:
        return session_files.resolve_session(name, directory) is not None

    try:
        spec = parse_slice(text, exists)
    except SliceError as exc:
        raise UsageFailure(f"{which}: {exc}") from None
    path = session_files.resolve_session(spec.source, directory)
    if path is None:
        raise UsageFailure(f"{which}: no session {shown(repr(spec.source))}: not a file, not in "
                           f"{shown(str(directory))}, not a bundled example (see `perftriage "
                           "sessions`)")
    return spec, Path(path)


def _rough_window(which: str, spec, path: Path) -> tuple[float, float] | None:
    """Where the slice can be before the file is read (None: anywhere)."""
    from perftriage.core.compare.load import segment_starts
    from perftriage.core.compare.slices import SliceError, shown, window
    from perftriage.core.store import transcript

    inf = float("inf")
    if spec.segment is not None:
        try:
            w = window(spec, segment_starts(path), inf)
        except SliceError:
            return None  # said with the file's length once it is read
        except (transcript.TranscriptError, OSError) as exc:
            raise UsageFailure(f"{which}: {shown(str(exc), 300)}") from None
        return w.start, w.end
    if spec.start is None and spec.end is None:
        return None
    return (spec.start or 0.0, inf if spec.end is None else spec.end)


def _open_sides(g, texts: tuple[str, str]):
    """The two slices, each file read once (only the parts the slices need)."""
    from perftriage.core.compare.compare import Side
    from perftriage.core.compare.load import load
    from perftriage.core.compare.slices import SliceError, shown, window
    from perftriage.core.sanitize import visible
    from perftriage.core.store import transcript

    parts = [(which, *_spec(g, text, which)) for which, text in zip("AB", texts)]
    spans: dict[Path, list[tuple[float, float]]] = {}
    whole: set[Path] = set()  # files a slice needs all of
    for which, spec, path in parts:
        rough = _rough_window(which, spec, path)
        if rough is None:
            whole.add(path.resolve())
        else:
            spans.setdefault(path.resolve(), []).append(rough)
    loaded = {}
    for which, spec, path in parts:
        key = path.resolve()
        if key in loaded:
            continue
        problems: list = []
        try:
            loaded[key] = load(path, problems, None if key in whole else spans[key])
        except (transcript.TranscriptError, OSError) as exc:
            raise UsageFailure(f"{which}: {shown(str(exc), 300)}") from None
        warn_unreadable(path, problems)
        skipped = _skipped(loaded[key])
        if skipped:
            click.echo(visible(f"warning: {path}: {skipped}"), err=True)
    sides = []
    for which, spec, path in parts:
        rec = loaded[path.resolve()]
        try:
            sides.append(Side(rec, window(spec, rec.segments, rec.duration)))
        except SliceError as exc:
            raise UsageFailure(f"{which}: {exc}") from None
    return sides


def _skipped(rec) -> str:
    """What a recording's series skipped as too big to compute with ("": nothing)."""
    from perftriage.core.compare.recording import CONTEXT_ONLY, MAX_READING, METRICS
    from perftriage.core.compare.slices import shown

    found = [(s.skipped, m, h, g) for (m, h, g), s in rec.series.items() if s.skipped]
    if not found:
        return ""
    found.sort(key=lambda row: -row[0])
    label = {**CONTEXT_ONLY, **{k: d.label for k, d in METRICS.items()}}
    where = [f"{label.get(m, m)} on {shown(h, 60)}" + (f" GPU {g}" if g >= 0 else "")
             + f" ({n:,})" for n, m, h, g in found[:5]]
    more = f" and {len(found) - 5} more series" if len(found) > 5 else ""
    return (f"{sum(row[0] for row in found):,} readings skipped, not finite or beyond "
            f"±{MAX_READING:.0e}: {', '.join(where)}{more}")


def _metrics(side) -> set[str]:
    from perftriage.core.compare.recording import METRICS

    w = side.window
    return {m for (m, h, g), series in side.rec.series.items()
            if m in METRICS and series.between(w.start, w.end)[0]}


def _check_readings(side_a, side_b) -> None:
    """Exit 2 when a slice holds no reading of any metric, or none that the other has."""
    from perftriage.core.compare.recording import METRICS
    from perftriage.core.clock import clock
    from perftriage.core.compare.slices import shown

    found = {"A": _metrics(side_a), "B": _metrics(side_b)}
    for which, side in (("A", side_a), ("B", side_b)):
        w = side.window
        if not found[which]:
            raise UsageFailure(
                f"{which} ({shown(w.label)}): no readings in {clock(w.start)}–{clock(w.end)}: no "
                "decode log lines, engine /metrics, live gap, GPU counters or GPU samples there")
    if not (found["A"] & found["B"]):
        names = ", ".join(sorted(METRICS[m].label for m in found["A"]))
        raise UsageFailure(f"A ({shown(side_a.window.label)}) and B ({shown(side_b.window.label)}) "
                           f"have no metric in common (A has {names})")


def _finite_pct(ctx, param, value: float) -> float:
    """--min-effect: a finite percentage (nan would make every change "no change")."""
    if not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite percentage")
    return value


@click.command("compare")
@click.argument("a")
@click.argument("b")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as one JSON object.")
@click.option("--min-effect", type=FiniteRange(min=0), default=5.0, show_default=True,
              metavar="PCT", callback=_finite_pct,
              help="A change smaller than this (in % of A) reads 'no change'.")
@click.pass_obj
def command(g, a: str, b: str, as_json: bool, min_effect: float) -> None:
    """Compare slice A (before) with slice B (after): per metric the medians,
    a two-sided Mann–Whitney U test at 98 % confidence on the per-second
    readings and an effect gate (--min-effect) give improved / regressed /
    no change / not enough data; warnings say where the slices are not
    comparable; what else changed (server arguments, versions, hypotheses).

    A slice is NAME (an investigation or transcript), NAME#N (its run N) or
    NAME@FROM-TO (session time as SS, MM:SS or H:MM:SS; @30- and @-1:30
    leave an end open)."""
    from perftriage.core.compare.compare import compare
    from perftriage.core.compare.render import text

    side_a, side_b = _open_sides(g, (a, b))
    _check_readings(side_a, side_b)
    result = compare(side_a, side_b, min_effect)
    if as_json:
        sys.stdout.write(json_text(result, indent=2) + "\n")
    else:
        sys.stdout.write(text(result))
