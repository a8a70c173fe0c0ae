"""A finding is split into its parts once (core/view/finding_parts.py), every
recorded string made visible there; the plain-text skin (``perftriage
triage``) and the Markdown skin (the report) lay the same parts out. A
hostile string (ESC, a C1 CSI byte, a bidi override, a newline, Markdown
``|`` and ``[``, Rich markup) comes out shown in each, never obeyed.
The Rich skin's test is tests/ui/test_finding_rich.py."""

from __future__ import annotations

from markdown_it import MarkdownIt

from perftriage.core.model.findings import Evidence, Finding, NextStep
from perftriage.core.report.finding_md import md_head, md_lines
from perftriage.core.report.md_text import inline
from perftriage.core.triage.phase import Phase
from perftriage.core.view.finding_parts import NEXT_CHARS, Step, Witness, finding_parts
from perftriage.core.view.triage_text import plain_lines, text

HOSTILE = "zq\x1b[2J\x9b31m\u202egnp.exe | [x](http://127.0.0.1/steal) [red]boom[/red]\nnext"
# what the sanitizer shows for it: every control a printable stand-in
SHOWN = "zq␛[2J<9b>31m<U+202E>gnp.exe | [x](http://127.0.0.1/steal) [red]boom[/red]␊next"
RAW = ("\x1b", "\x9b", "\u202e", "\n", "\r")


def hostile_finding(confirmed: bool = True) -> Finding:
    return Finding(
        "host-stall", f"busy in {HOSTILE}", 42.0,
        evidence=[Evidence("stacks", f"frame {HOSTILE}", at=12.5, source="p1")],
        against=[Evidence("log", f"line {HOSTILE}", source=f"src {HOSTILE}")],
        next=NextStep(kind="stacks", args=["--seconds", "3", HOSTILE], why=f"why {HOSTILE}"),
        fix=[f"fix {HOSTILE}"], host="gpu1", confirmed=confirmed)


def test_the_parts_are_the_findings_own_made_visible():
    p = finding_parts(hostile_finding())
    assert (p.severity, p.cause, p.share, p.lead) == ("high", "host-stall", "42 %", False)
    assert p.title == f"busy in {SHOWN}"
    assert p.evidence == (Witness("stacks p1", "0:12", f"frame {SHOWN}"),)
    assert p.against == (Witness(f"log src {SHOWN}", "", f"line {SHOWN}"),)
    assert p.fix == (f"fix {SHOWN}",)
    assert p.next == Step("stacks", ("--seconds", "3", SHOWN), f"why {SHOWN}")
    assert p.line == f"high · host-stall · 42 % · busy in {SHOWN}"
    # a lead without a share: its rank word, no share
    lead = finding_parts(Finding("wasted-traffic", "need G", None, confirmed=False))
    assert (lead.rank, lead.share, lead.lead) == ("lead", "", True)
    assert lead.line == "moderate · wasted-traffic · need G"


def test_a_long_recorded_next_step_is_said_short():
    args = ["x" * 50] * 5
    p = finding_parts(Finding("launch-bound", "t", 20.0,
                              next=NextStep(kind="stacks", args=args, why="")))
    assert p.next is not None and len(p.next.words) == NEXT_CHARS + 1
    assert p.next.words.endswith("…")


def test_the_plain_skin_lays_out_the_parts():
    lines = plain_lines(finding_parts(hostile_finding()))
    assert lines == [
        f"  high     host-stall               42 %  busy in {SHOWN}",
        f"           ← stacks p1 at 0:12: frame {SHOWN}",
        f"           ✗ log src {SHOWN}: line {SHOWN}",
        f"           fix: fix {SHOWN}",
        f"           next: stacks --seconds 3 {SHOWN} — why {SHOWN}",
    ]
    assert not any(c in line for line in lines for c in RAW)
    assert plain_lines(finding_parts(hostile_finding()), detail=False) == lines[:1]
    lead = plain_lines(finding_parts(Finding("wasted-traffic", "need G", None,
                                             confirmed=False)))
    assert lead == ["  moderate wasted-traffic            n/a  need G (a lead)"]
    # no share: "n/a" ends in the share column, as "42 %" does
    assert lead[0].index("n/a") + 3 == lines[0].index("42 %") + 4


def test_the_triage_text_shows_each_phase_with_the_plain_skin():
    phase = Phase(host=f"gpu{HOSTILE}", start=0.0, end=30.0, findings=[hostile_finding()],
                  run_start=False)
    out = text(f"label{HOSTILE}", [phase])
    assert not any(c in out.replace("\n", "") for c in RAW)
    assert out.splitlines()[:3] == [f"triage label{SHOWN}", "", f"phase 0:00–0:30 on gpu{SHOWN}"]
    assert out.splitlines()[3:] == plain_lines(finding_parts(hostile_finding()))


def test_the_markdown_skin_lays_out_the_same_parts_escaped():
    lines = md_lines(finding_parts(hostile_finding()))
    esc = inline(SHOWN)
    assert "\\|" in esc and "\\[x\\]" in esc and "\\[red\\]" in esc
    assert lines == [
        f"- **high · host-stall · 42 % · busy in {esc}**",
        f"  - stacks p1 at 0:12: frame {esc}",
        f"  - against: log src {esc}: line {esc}",
        f"  - fix: fix {esc}",
        f"  - next: stacks --seconds 3 {esc} — why {esc}",
    ]
    assert not any(c in line for line in lines for c in RAW)
    tokens = MarkdownIt("commonmark").enable("table").parse("\n".join(lines) + "\n")
    kinds = {t.type for t in tokens} | {c.type for t in tokens for c in t.children or ()}
    assert not kinds & {"link_open", "image", "html_inline", "html_block", "table_open"}
    items = [t for t in tokens if t.type == "list_item_open"]
    assert len(items) == 5  # the head and its four parts: nothing joined or split
    lead = finding_parts(Finding("wasted-traffic", "need G", None, confirmed=False))
    assert md_lines(lead) == ["- **moderate · wasted-traffic · need G** (a lead)"]
    assert md_head(lead) == "moderate · wasted-traffic · need G (a lead)"


def test_the_short_form_the_report_summary_uses():
    lead = Finding(cause="kernel-below-roofline", confirmed=False, explains_pct=48.4, host="h",
                   title="t")
    assert finding_parts(lead).short == "kernel-below-roofline (a lead, 48 %)"
    done = Finding(cause="launch-bound", confirmed=True, explains_pct=0.5, host="h", title="t")
    assert finding_parts(done).short == "launch-bound (0.5 %)"
    bare = Finding(cause="near-floor", confirmed=True, explains_pct=None, host="h", title="t")
    assert finding_parts(bare).short == "near-floor"
    recorded = finding_parts(Finding(cause=HOSTILE, confirmed=True, explains_pct=None,
                                     host="h", title="t")).short
    assert not any(c in recorded for c in RAW)  # a recorded cause is shown, never obeyed
