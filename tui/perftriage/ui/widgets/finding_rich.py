"""A finding's parts (core/view/finding_parts.py) as Rich ``Text``: its head
in one line (the main screen's triage line, the Gap view's verdict), its
row in the Triage view's table, and the finding whole below that table.

The parts are already made visible by the sanitizer; they are appended to
``Text`` as text, never parsed as markup, so a frame named ``[red]`` or
``[@click=app.quit]`` reads as itself."""

from __future__ import annotations

from rich.text import Text

from perftriage.core.sanitize import visible
from perftriage.core.view.finding_parts import FindingParts, Witness

SEVERITY_STYLE = {"high": "bold red", "moderate": "yellow"}
LEAD_STYLE = "cyan"


def _rank_style(p: FindingParts) -> str:
    """``lead`` in its colour, else the severity in its own."""
    return LEAD_STYLE if p.lead else SEVERITY_STYLE.get(p.severity, "")


def head_text(p: FindingParts) -> Text:
    """``high · host-stall · 42 % · the host's Python …`` (a lead: ``lead · …``)."""
    out = Text()
    out.append(p.rank, style=_rank_style(p))  # the rank's style only, not the line's
    out.append(f" · {p.cause}", style="bold")
    if p.share:
        out.append(f" · {p.share}")
    out.append(f" · {p.title}")
    return out


def row_cells(p: FindingParts) -> list[Text]:
    """The Triage view's row: severity (or lead), cause, share, title."""
    return [Text(p.rank, style=_rank_style(p)), Text(p.cause, style="bold"), Text(p.share or "n/a"), Text(p.title)]


def _witness(out: Text, mark: str, style: str, w: Witness) -> None:
    out.append(f"\n{mark} ", style=style)
    out.append(w.label, style="bold")
    if w.at:
        out.append(f" at {w.at}", style="dim")
    out.append(f": {w.text}")


def finding_text(p: FindingParts, host: str) -> Text:
    """The finding whole: its head, its host, the evidence (witness, source,
    when), what speaks against it, the fix, and the next step it names (said
    short; what Enter runs is said below it by the Triage view)."""
    out = head_text(p)
    out.append(f"\non {visible(host)}", style="dim")
    for w in p.evidence:
        _witness(out, "←", "green", w)
    for w in p.against:
        _witness(out, "✗", "red", w)
    for fix in p.fix:
        out.append("\nfix: ", style="bold")
        out.append(fix)
    if p.next is not None:
        out.append("\nnext: ", style="bold")
        out.append(p.next.words)
        if p.next.why:
            out.append(f" — {p.next.why}", style="dim")
    return out
