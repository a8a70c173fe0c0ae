"""The report's opening section: the before/after table of a comparison
(:mod:`perftriage.core.compare`) in Markdown."""

from __future__ import annotations

from typing import Any

from perftriage.core.compare.render import HEADER, changes_lines, metric_cells, profile_cells
from perftriage.core.compare.slices import clock
from perftriage.core.report.md_text import cell


def markdown(result: dict[str, Any], title: str = "## Before / after") -> list[str]:
    """The report's opening section (lines)."""
    def row(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(cell(c) for c in cells) + " |"

    a, b = result["a"], result["b"]
    out = [title, "",
           f"A: {cell(a['label'])} ({clock(a['from'])}–{clock(a['to'])}) · "
           f"B: {cell(b['label'])} ({clock(b['from'])}–{clock(b['to'])})", "",
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
