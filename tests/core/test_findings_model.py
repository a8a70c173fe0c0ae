"""The findings vocabulary (core/model/findings.py): a transcript written
before findings were typed decodes into them and says the same; the one
``top()`` is the first problem, first in every ranked list."""

from __future__ import annotations

import json

from perftriage.core.compare.recording import Recording
from perftriage.core.model import events as ev
from perftriage.core.model.findings import Earlier, Evidence, Finding, NextStep, ranked, top
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.triage.phases import triage
from tests.core.test_triage_real import EAGER
from tests.core.test_triage_rules import _stacks_detail
from tests.support.helpers import FIXTURES

# one triage.updated as the version before typed findings wrote it (its own
# code, checked out of git at 779459c, over the capture and stacks below)
BEFORE = FIXTURES / "triage-updated-before-typed.json"


def _phase():
    rec = Recording()
    rec.feed(ev.ProfileCaptured(capture_id="prof1", host="gpu1", summary=summarize_files(EAGER),
                                t=10.0))
    rec.feed(ev.ProbeQueued(probe_id="p1", host="gpu1", kind="stacks", args=[], t=11))
    rec.feed(ev.ProbeFinished(probe_id="p1", status="ok", t=12,
                              detail=_stacks_detail(20.0, 75.0, 25.0)))
    [phase] = triage(rec, 0.0, 30.0)
    return phase


def test_a_transcript_from_before_typed_findings_decodes_and_says_the_same():
    e = ev.decode(BEFORE.read_bytes())
    assert isinstance(e, ev.TriageUpdated)
    assert all(isinstance(f, Finding) for f in e.findings)
    assert all(isinstance(x, Evidence) for f in e.findings for x in f.evidence)
    [line] = e.earlier
    assert isinstance(line, Earlier) and line.state == "resolved" and line.vs == "the phase before"
    old = json.loads(BEFORE.read_bytes())["findings"]
    # what the old file says is what the typed findings say, field by field
    assert [f.public() for f in e.findings] == old
    # and what today's triage says over the same evidence
    assert [f.public() for f in _phase().findings] == old


def test_the_public_shape_keeps_its_field_order():
    f = _phase().findings[0]
    assert list(f.public())[:8] == ["cause", "severity", "title", "explains_pct", "evidence",
                                    "against", "next", "fix"]


def test_one_top_the_first_problem_first_in_every_ranked_list():
    floor = Finding("near-floor", "within 1.2x", 20.0)
    throttle = Finding("gpu-throttle", "clocks held", 10.0)
    lead = Finding("kernel-below-roofline", "need ncu", 30.0, confirmed=False,
                   next=NextStep("ncu", [], "why"))
    found = ranked([floor, throttle, lead])
    assert top(found) is throttle and found[0] is throttle  # a problem before a bigger remark
    assert found[1:] == [lead, floor]
    only_remarks = ranked([floor, lead])
    assert top(only_remarks) is lead and only_remarks[0] is lead  # no problem: the first
    assert top([]) is None
