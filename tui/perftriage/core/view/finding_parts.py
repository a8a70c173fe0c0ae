"""A finding split into the parts every reader shows, once: the head
(severity, cause, share, title, lead or confirmed), the evidence and what
speaks against it (label, when, text), the fix, and the next step (kind,
arguments, why).

Every string that came from a rule over remote readings or from a
transcript (a frame, a kernel, a log line, a host, a recorded ``why``)
passes through the sanitizer here (:func:`perftriage.core.sanitize.visible`:
controls, C1 bytes and bidi marks become printable stand-ins, a newline
``␊``), so a skin only lays the parts out, in one order (head, evidence,
against, fix, next: :func:`part_lines` for the skins of plain lines). The
skins, all thin:

- plain text, ``perftriage triage`` (``core/view/triage_text.py``);
- Markdown, the report (``core/report/finding_md.py``: escapes the parts
  with ``md_text.inline``);
- Rich, the UI's main line, the Gap view's verdict and the Triage view
  (``ui/widgets/finding_rich.py``: the parts become ``Text``, never markup).

The next step shown here is what the finding names, said short; it is never
what runs (the cockpit rebuilds that from the live triage's typed values:
``services/triage/next_step.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from perftriage.core.clock import clock
from perftriage.core.model.findings import Evidence, Finding, NextStep, pct
from perftriage.core.sanitize import visible

NEXT_CHARS = 120  # a next step's kind and arguments, shown up to this
LEAD = "a lead"  # what marks a finding not confirmed yet, in words


@dataclass(frozen=True)
class Witness:
    """One line of evidence (or against): ``capture prof3 at 0:10: GPU idle 85 %``."""

    label: str  # the witness and its source: ``capture prof3``
    at: str  # ``0:10``; empty when not known
    text: str

    @property
    def when(self) -> str:
        """`` at 0:10``, or nothing."""
        return f" at {self.at}" if self.at else ""


@dataclass(frozen=True)
class Step:
    """The next step as the finding names it: ``stacks --seconds 3 — why``."""

    kind: str
    args: tuple[str, ...]
    why: str

    @property
    def words(self) -> str:
        """Kind and arguments, cut at :data:`NEXT_CHARS` (a recorded step may be long)."""
        words = " ".join((self.kind, *self.args))
        return words if len(words) <= NEXT_CHARS else words[:NEXT_CHARS] + "…"


@dataclass(frozen=True)
class FindingParts:
    severity: str  # high | moderate
    cause: str
    share: str  # ``42 %``; empty when the finding has none
    title: str
    lead: bool  # not confirmed yet: a suspected cause, or what to measure
    evidence: tuple[Witness, ...]
    against: tuple[Witness, ...]
    fix: tuple[str, ...]
    next: Step | None

    @property
    def rank(self) -> str:
        """The word the UI's head starts with: ``lead`` for a lead, else the severity."""
        return "lead" if self.lead else self.severity

    @property
    def short(self) -> str:
        """``launch-bound (85 %)``, ``kernel-below-roofline (a lead, 48 %)``:
        the cause as a summary names it."""
        notes = ([LEAD] if self.lead else []) + ([self.share] if self.share else [])
        return self.cause + (f" ({', '.join(notes)})" if notes else "")

    @property
    def line(self) -> str:
        """``high · host-stall · 42 % · the host's Python …`` (no lead mark)."""
        share = f" · {self.share}" if self.share else ""
        return f"{self.severity} · {self.cause}{share} · {self.title}"


def _witness(e: Evidence) -> Witness:
    return Witness(visible(e.label), "" if e.at is None else clock(e.at), visible(e.text))


def _step(s: NextStep) -> Step:
    return Step(visible(s.kind), tuple(visible(a) for a in s.args), visible(s.why))


def finding_parts(f: Finding) -> FindingParts:
    return FindingParts(
        severity=f.severity, cause=visible(f.cause),
        share="" if f.explains_pct is None else pct(f.explains_pct),
        title=visible(f.title), lead=not f.confirmed,
        evidence=tuple(_witness(e) for e in f.evidence),
        against=tuple(_witness(e) for e in f.against),
        fix=tuple(visible(x) for x in f.fix),
        next=None if f.next is None else _step(f.next))


def part_lines(p: FindingParts, *, evidence: str, against: str,
               escape: Callable[[str], str] = str) -> list[str]:
    """Each part after the head as one line, in the one order (evidence,
    against, fix, next), marked as a skin marks evidence and against; the
    parts' words pass through ``escape`` (the Markdown skin's escaping)."""
    out = [f"{evidence}{escape(w.label)}{w.when}: {escape(w.text)}" for w in p.evidence]
    out += [f"{against}{escape(w.label)}{w.when}: {escape(w.text)}" for w in p.against]
    out += [f"fix: {escape(x)}" for x in p.fix]
    if p.next is not None:
        why = f" — {escape(p.next.why)}" if p.next.why else ""
        out.append(f"next: {escape(p.next.words)}{why}")
    return out
