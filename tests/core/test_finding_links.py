"""Hypotheses whose checks read a triage cause get its confirmed finding as
evidence (core/checks/finding_links.py)."""

from __future__ import annotations

from perftriage.core.checks.catalogue import TRIAGE_CAUSES
from perftriage.core.checks.finding_links import causes_read, links
from perftriage.core.model.findings import Finding
from perftriage.core.model.state import Evidence, Hypothesis


def _finding(cause: str, confirmed: bool = True) -> Finding:
    return Finding(cause=cause, title=f"{cause}: 42 % of the time", explains_pct=42.0,
                   confirmed=confirmed)


def test_a_check_reads_the_causes_it_names_and_nothing_else():
    assert causes_read("triage.host_stall_pct > 15") == {"host-stall"}
    assert causes_read('triage.top == "launch-bound" and gap.traffic_ratio < 1.5') \
        == {"launch-bound"}
    assert causes_read("triage.top_pct > 15") == set()  # the top's share: no cause
    assert causes_read('triage.top == "nonsense" or triage.bogus_pct > 1') == set()
    assert causes_read("gpu.util_pct < 50") == set()
    every = " or ".join(f"triage.{c.replace('-', '_')}_pct > 1" for c in TRIAGE_CAUSES)
    assert causes_read(every) == set(TRIAGE_CAUSES)


def test_confirmed_findings_are_linked_once_per_host_and_cause():
    stall = Hypothesis(hyp_id="h1", title="the scheduler stalls",
                       check="triage.host_stall_pct >= 15")
    other = Hypothesis(hyp_id="h2", title="no check")
    graphs = Hypothesis(hyp_id="h3", title="launch-bound", check='triage.top == "launch-bound"')
    found = [_finding("host-stall"), _finding("launch-bound", confirmed=False)]
    added = links([stall, other, graphs], "gpu1", found)
    assert [(e.hyp_id, e.ref_kind, e.ref_id, e.stance) for e in added] == [
        ("h1", "finding", "gpu1:host-stall", "for")]
    assert added[0].summary == "gpu1: host-stall: 42 % of the time"
    # linked already: not again; another host: its own link
    stall.evidence.append(Evidence(ref_kind="finding", ref_id="gpu1:host-stall", stance="for"))
    assert links([stall], "gpu1", found) == []
    assert [e.ref_id for e in links([stall], "gpu2", found)] == ["gpu2:host-stall"]
