"""A hypothesis whose check reads a triage cause gets that cause's finding as
evidence when the triage confirms it: ``triage.host_stall_pct > 15`` or
``triage.top == "host-stall"`` reads ``host-stall``, so the live triage's
confirmed host-stall finding on a host is linked to it (for), once per host
and cause, with the finding's title. A lead ("need a capture") is not
evidence; a finding the triage drops later stays linked, as a probe does.

The check's text is read for the names, not evaluated: the verdict of the
check itself stays the check's (core/checks/verdicts.py)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from perftriage.core.checks.catalogue import TRIAGE_CAUSES
from perftriage.core.model import events as ev
from perftriage.core.model.findings import Finding
from perftriage.core.model.state import Hypothesis

_CAUSE_PCT = re.compile(r"\btriage\.([a-z_]+)_pct\b")
_TOP_IS = re.compile(r"""\btriage\.top\s*==\s*["']([a-z-]+)["']""")
_BY_FIELD = {c.replace("-", "_"): c for c in TRIAGE_CAUSES}


def causes_read(check: str) -> frozenset[str]:
    """The triage causes a check's text reads (its ``CAUSE_pct`` fields and
    ``top == "CAUSE"`` comparisons)."""
    found = {_BY_FIELD[m] for m in _CAUSE_PCT.findall(check) if m in _BY_FIELD}
    found |= {c for c in _TOP_IS.findall(check) if c in TRIAGE_CAUSES}
    return frozenset(found)


def ref_id(host: str, cause: str) -> str:
    return f"{host}:{cause}"


def links(hypotheses: Iterable[Hypothesis], host: str,
          findings: Iterable[Finding]) -> list[ev.EvidenceLinked]:
    """The evidence links the findings of ``host`` add: each confirmed
    finding of a cause a hypothesis's check reads, not linked to that
    hypothesis before."""
    confirmed = [f for f in findings if f.confirmed and f.cause in TRIAGE_CAUSES]
    out: list[ev.EvidenceLinked] = []
    for h in hypotheses:
        wanted = causes_read(h.check) if h.check else frozenset()
        if not wanted:
            continue
        have = {e.ref_id for e in h.evidence if e.ref_kind == "finding"}
        for f in confirmed:
            cause = f.cause
            if cause in wanted and ref_id(host, cause) not in have:
                out.append(ev.EvidenceLinked(
                    hyp_id=h.hyp_id, ref_kind="finding", ref_id=ref_id(host, cause),
                    stance="for", summary=f"{host}: {f.title or cause}"))
    return out
