"""The report's opening section: the before/after table of a comparison
(:mod:`perftriage.core.compare`) in Markdown."""

from __future__ import annotations

from typing import Any

from perftriage.core.compare.changepoints import phases
from perftriage.core.compare.compare import PHASE_METRICS, Side, compare, with_unit
from perftriage.core.compare.recording import METRICS, Recording
from perftriage.core.compare.render import (HEADER, changes_lines, metric_cells, profile_cells,
                                            side_title)
from perftriage.core.clock import clock
from perftriage.core.compare.slices import Window
from perftriage.core.report.md_text import cell

TITLE = "## Before / after"


def markdown(result: dict[str, Any], title: str = TITLE) -> list[str]:
    """The report's opening section (lines)."""
    def row(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(cell(c) for c in cells) + " |"

    a, b = result["a"], result["b"]
    out = [title, "",
           f"A: {cell(side_title(a))} · B: {cell(side_title(b))}", "",
           f"**{cell(result['summary'])}**", "",
           row(HEADER), "|" + "---|" * len(HEADER)]
    out += [row(metric_cells(r)) for r in result["metrics"]]
    if result["profile"] is not None:
        out += [row(c) for c in profile_cells(result["profile"])]
    out.append("")
    if result["warnings"]:
        out += [f"- ⚠ {cell(w)}" for w in result["warnings"]] + [""]
    changed = changes_lines(result["changes"])
    if changed:
        out += ["What else changed:", "", *(f"- {cell(c)}" for c in changed), ""]
    return out


# --- what the report opens with ---------------------------------------------------


def report_sides(rec: Recording) -> tuple[Side, Side] | None:
    """The before and after the report compares: the baseline against the last
    run (or, when the baseline is in the last run, against what followed it,
    from the last server restart after it: never a slice across a restart);
    without a baseline, the first run against the last. None for one run
    without a baseline."""
    runs = rec.segments
    last_start = runs[-1][1] if len(runs) > 1 else 0.0
    last = Window(f"run {runs[-1][0]}" if len(runs) > 1 else "after", last_start, rec.duration)
    b = rec.baseline
    if b is not None:
        before = Window(f"baseline {b.label}".strip(), b.start, b.end)
        after = last if b.end <= last_start else _after(rec, b.end)
        return Side(rec, before), Side(rec, after)
    if len(runs) < 2:
        return None
    first = Window(f"run {runs[0][0]}", 0.0, runs[1][1])
    return Side(rec, first), Side(rec, last)


def _after(rec: Recording, t: float) -> Window:
    """What followed ``t``: from the last server restart after it, if any."""
    restarts = [s.t for s in rec.servers if s.state == "starting" and t + 1.0 < s.t < rec.duration]
    if restarts:
        return Window(f"after the restart at {clock(max(restarts))}", max(restarts), rec.duration)
    return Window("after the baseline", t, rec.duration)


def before_after_section(rec: Recording | None) -> list[str]:
    """The report's first table, for an investigation with a baseline or more
    than one run (nothing otherwise, or when the two share no metric)."""
    if rec is None:
        return []
    sides = report_sides(rec)
    if sides is None:
        return []
    a, b = sides
    if a.window.length <= 0 or b.window.length <= 0:
        return []
    result = compare(a, b)
    if not result["metrics"] and result["profile"] is None:
        return [TITLE, "", f"{cell(a.window.label)} and {cell(b.window.label)} share no "
                "readings to compare.", ""]
    return markdown(result)


def phases_section(rec: Recording | None) -> list[str]:
    """``## Phases``: where decode throughput and the gap changed level
    (change points), each phase with its median and its ratio to the one
    before; nothing when every series kept one level."""
    if rec is None:
        return []
    rows = []
    for metric in PHASE_METRICS:
        m = METRICS[metric]
        for (mid, host, gpu) in rec.series:
            if mid != metric or gpu != -1:
                continue
            ts, vs = rec.readings(metric, host, 0.0, rec.duration)
            found = phases(ts, vs)
            if len(found) < 2:
                continue
            prev = None
            for ph in found:
                vs_prev = "—" if prev is None or not prev.median else \
                    f"{ph.median / prev.median:.2f}×"
                rows.append(f"| {cell(m.label)} · {cell(host)} | {clock(ph.start)} | "
                            f"{clock(ph.end)} | {cell(with_unit(ph.median, m.unit))} | {ph.n} | "
                            f"{vs_prev} |")
                prev = ph
    if not rows:
        return []
    return ["## Phases", "",
            "Where decode throughput and the gap changed level (change points: a shift of "
            "15 % or more, p < 0.001); each phase's median of its per-second readings.", "",
            "| series | from | to | median | seconds | vs the phase before |",
            "|---|---|---|---:|---:|---:|", *rows, ""]
