"""The Rich skin of a finding's parts (ui/widgets/finding_rich.py): the head
in one line (the main screen, the Gap view), the Triage view's row and the
finding whole. A hostile string comes out as text: its controls shown, its
Rich markup (``[red]``, ``[@click=…]``) never parsed. And the three skins
(plain text, Markdown, Rich) lay out the same parts in the same order."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from perftriage.core.model.findings import Finding
from perftriage.core.report.finding_md import md_lines
from perftriage.core.view.finding_parts import finding_parts
from perftriage.core.view.triage_text import plain_lines
from perftriage.ui.widgets.finding_rich import (
    LEAD_STYLE,
    SEVERITY_STYLE,
    finding_text,
    head_text,
    row_cells,
)
from tests.core.test_finding_parts import HOSTILE, RAW, SHOWN, hostile_finding

CLICK = "[@click=app.quit]"


def _styles_over(text: Text, word: str) -> set[str]:
    at = text.plain.index(word)
    return {str(s.style) for s in text.spans if s.start <= at < s.end}


def test_the_rich_skin_lays_out_the_parts_as_text():
    f = hostile_finding()
    f.title += f" {CLICK}"
    p = finding_parts(f)
    head = head_text(p)
    assert head.plain == f"high · host-stall · 42 % · busy in {SHOWN} {CLICK}"
    # the severity alone carries its colour; the markup in the title is text
    assert _styles_over(head, "high") == {SEVERITY_STYLE["high"]}
    assert _styles_over(head, "boom") == set() and "[red]boom[/red]" in head.plain
    whole = finding_text(p, f"gpu{HOSTILE}")
    assert whole.plain.splitlines() == [
        head.plain,
        f"on gpu{SHOWN}",
        f"← stacks p1 at 0:12: frame {SHOWN}",
        f"✗ log src {SHOWN}: line {SHOWN}",
        f"fix: fix {SHOWN}",
        f"next: stacks --seconds 3 {SHOWN} — why {SHOWN}",
    ]
    assert not any(c in whole.plain.replace("\n", "") for c in RAW)
    # written to a terminal: no byte of the hostile string's controls reaches it
    console = Console(force_terminal=True, color_system="truecolor", width=400)
    with console.capture() as cap:
        console.print(whole)
    written = cap.get()
    assert "\x9b" not in written and "\u202e" not in written and "\x1b[2J" not in written
    assert [c.plain for c in row_cells(p)] == ["high", "host-stall", "42 %", head.plain
                                               .split(" · ", 3)[3]]


def test_a_lead_says_lead_in_its_colour():
    p = finding_parts(Finding("wasted-traffic", "need G", None, confirmed=False))
    head = head_text(p)
    assert head.plain == "lead · wasted-traffic · need G"
    assert _styles_over(head, "lead") == {LEAD_STYLE}
    assert [c.plain for c in row_cells(p)] == ["lead", "wasted-traffic", "n/a", "need G"]


def test_the_three_skins_show_the_same_parts_in_the_same_order():
    """Head, evidence, against, fix, next: the order of each skin's lines,
    and each part's words, are the same in the CLI's text, the report and
    the Triage view."""
    p = finding_parts(hostile_finding())
    plain = plain_lines(p)
    md = md_lines(p)
    rich = finding_text(p, "gpu1").plain.splitlines()
    rich = rich[:1] + rich[2:]  # the view says the host under the head
    assert len(plain) == len(md) == len(rich) == 5
    for words in ("busy in", "stacks p1 at 0:12: frame", "line", "fix: fix",
                  "next: stacks --seconds 3"):
        assert [i for i, line in enumerate(plain) if words in line] == \
            [i for i, line in enumerate(md) if words in line] == \
            [i for i, line in enumerate(rich) if words in line], words
