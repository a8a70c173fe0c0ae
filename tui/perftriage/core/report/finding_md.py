"""A finding's parts (core/view/finding_parts.py) as the report's Markdown:
the head in bold, then one sub-item per part. The parts are already made
visible (no control reaches the file); here they are made Markdown-safe
(``md_text.inline``: no link, image, tag, code span or table cell can be
made from a frame's or a log line's text)."""

from __future__ import annotations

from perftriage.core.report.md_text import inline
from perftriage.core.view.finding_parts import LEAD, FindingParts, part_lines


def md_head(p: FindingParts, *, bold: bool = False, lead: str = LEAD) -> str:
    """``high · host-stall · 42 % · the host's Python …`` (``bold``: in
    ``**``), and `` (a lead)`` (``lead``'s words) after it for a finding
    not confirmed yet."""
    head = f"**{inline(p.line)}**" if bold else inline(p.line)
    return head + (f" ({lead})" if p.lead else "")


def md_lines(p: FindingParts) -> list[str]:
    """``- **head** (a lead)`` and its parts as sub-items: evidence, against,
    fix, next."""
    return [f"- {md_head(p, bold=True)}",
            *(f"  - {line}" for line in part_lines(p, evidence="", against="against: ",
                                                   escape=inline))]
