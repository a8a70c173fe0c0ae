"""The triage's rules register themselves (core/triage/rules.py): the cause,
its place in the diagnosis and its own witness sit on the rule; the one
cause list (core/model/findings.py) and the rules cannot drift apart."""

from __future__ import annotations

import pytest

from perftriage.core.model.findings import CAUSES, Finding
from perftriage.core.triage import diagnose, rules
from perftriage.core.triage.after_fix import _own
from perftriage.core.triage.witnesses import Witnesses


def test_every_listed_cause_has_a_rule_and_every_rule_a_listed_cause():
    assert {r.cause for r in rules.registered()} == set(CAUSES)
    rules.check(CAUSES)
    with pytest.raises(RuntimeError, match=r"listed without a rule \['new-cause'\]"):
        rules.check((*CAUSES, "new-cause"))
    with pytest.raises(RuntimeError, match=r"a rule for an unlisted cause \['queueing'\]"):
        rules.check(c for c in CAUSES if c != "queueing")


def test_a_cause_declared_twice_otherwise_is_refused():
    with pytest.raises(ValueError, match="wasted-traffic"):
        rules.rule("wasted-traffic", own=("ncu",))(lambda w, busy=None: None)


def test_the_own_witness_after_a_fix_is_the_one_its_rule_declares():
    own = rules.own_witness()
    assert own["host-stall"] == ("stacks",) and own["kv-pressure"] == ("log", "engine")
    f = Finding(cause="gpu-throttle", title="t", explains_pct=20.0)
    assert _own(f) == ("nvml",)
    assert diagnose.BUSY_TIME_CAUSES == {"wasted-traffic", "gpu-throttle", "exposed-comm",
                                         "straggler"}


def test_a_rule_registered_beside_the_tree_is_called_by_the_diagnosis(monkeypatch):
    """A new rule needs no call of its own in diagnose(): registering it is the call."""
    seen: list[float | None] = []

    def planted(w: Witnesses, busy_pct: float | None = None) -> Finding | None:
        seen.append(busy_pct)
        return Finding(cause="queueing", title="planted", explains_pct=40.0, host=w.host)

    monkeypatch.setattr(rules, "RULES", list(rules.RULES))
    rules.rule("queueing", own=("log", "engine"), per_request=True)(planted)
    found = diagnose.diagnose(Witnesses(host="h", start=0.0, end=60.0, gpu_util_pct=90.0))
    assert seen == [90.0]
    assert found[0].title == "planted"


def test_a_rule_s_module_read_again_registers_it_once(monkeypatch):
    import importlib

    from perftriage.core.triage import serving

    monkeypatch.setattr(rules, "RULES", list(rules.RULES))
    before = [(r.cause, r.fn.__qualname__) for r in rules.registered()]
    importlib.reload(serving)
    after = [(r.cause, r.fn.__qualname__) for r in rules.registered()]
    assert after == before
    assert serving.kv_finding in rules.beside()  # the new module's functions run
