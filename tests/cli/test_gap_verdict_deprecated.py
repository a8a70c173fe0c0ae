"""``gap.verdict`` / ``gap.verdict_kind`` keep working for a release with a
deprecation note: an old transcript's recorded verdict where there is one,
else the triage's top (the gap judges no more)."""

from __future__ import annotations

from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.checks.catalogue import Signal
from perftriage.core.checks.pack import parse
from perftriage.core.checks.signals import ScopeKey, SignalTable
from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.findings import Finding
from perftriage.core.model.state import SessionState
from tests.support.helpers import FIXTURES

FINDING = Finding(cause="wasted-traffic", title="memory moves 5.0x", explains_pct=80.0)


def test_a_new_gap_sample_reads_the_triages_top():
    state = SessionState()
    apply(state, ev.GapSample(host="h", gap=9.0, traffic_ratio=5.0, t=1.0))
    scope = ScopeKey("host", host="h")
    kind, words = (SignalTable(state, 2.0).read(Signal("gap", f), scope)
                   for f in ("verdict_kind", "verdict"))
    assert "no triage of h yet" in str(kind)  # missing, never a verdict of the gap's own
    apply(state, ev.TriageUpdated(host="h", end=1.0, findings=[FINDING], t=1.5))
    kind, words = (SignalTable(state, 2.0).read(Signal("gap", f), scope)
                   for f in ("verdict_kind", "verdict"))
    assert kind == "wasted-traffic" and words == "high · wasted-traffic · memory moves 5.0x"
    # a transcript from before: its recorded verdict stands
    apply(state, ev.GapSample(host="h", gap=1.1, verdict_kind="near-floor", t=1.8))
    assert SignalTable(state, 2.0).read(Signal("gap", "verdict_kind"), scope) == "near-floor"


def test_a_pack_reading_them_carries_the_deprecation_note(tmp_path):
    (h,) = parse('[[hypotheses]]\ntitle = "t"\ncheck = "gap.verdict_kind == \'near-floor\'"\n')
    assert len(h.notes) == 1 and "read triage.top" in h.notes[0]
    (plain,) = parse('[[hypotheses]]\ntitle = "t"\ncheck = "gap.gap < 2"\n')
    assert plain.notes == ()
    pack = tmp_path / "old.toml"
    pack.write_text('[[hypotheses]]\ntitle = "wasted"\ncheck = \'gap.verdict_kind == '
                    '"wasted-traffic"\'\n')
    r = CliRunner().invoke(cli, ["check", str(FIXTURES / "gpm" / "h200-run" / "transcript.jsonl"),
                                 "--pack", str(pack), "--at", "20", "--json"])
    assert r.exit_code == 0, r.output
    assert "gap.verdict_kind is deprecated" in r.stderr
    assert '"verdict": "supported"' in r.stdout  # the old recording's verdict still reads
