"""The live gap per host as debounced verdict spans: on the real three-host
H200 recording (14 alternating raw verdict changes within minutes) each host
tells the run's three phases, and the report shows them per host."""

from __future__ import annotations

from pathlib import Path

from perftriage.core.analysis.verdict_spans import current_span, spans_by_host
from perftriage.core.model import events as ev
from perftriage.core.report.markdown import render_transcript
from perftriage.core.store import transcript

RUN2 = Path(__file__).parents[1] / "fixtures" / "gpm" / "h200-run2" / "transcript.jsonl"


def _samples():
    return [e for e in transcript.read(RUN2).events if isinstance(e, ev.GapSample)]


def test_each_host_of_the_h200_run_has_its_three_phases():
    samples = _samples()
    raw = sum(1 for a, b in zip(samples, samples[1:]) if a.verdict_kind != b.verdict_kind)
    assert raw >= 10  # the flicker the report used to list
    spans = spans_by_host(samples)
    assert set(spans) == {"localhost", "viadmon", "viapynvml"}
    for host, host_spans in spans.items():
        assert [s.verdict_kind for s in host_spans] == ["idle", "wasted-traffic", "near-floor"]
        assert all(s.host == host for s in host_spans)
        slow, fast = host_spans[1], host_spans[2]
        assert slow.median("traffic_ratio") > 4 and fast.median("gap") < 1.2
        assert slow.end_t < fast.start_t


def _sample(t: float, kind: str, host: str = "h") -> ev.GapSample:
    return ev.GapSample(t=t, host=host, verdict_kind=kind, verdict=f"{kind} words", gap=float(t))


def test_a_verdict_changes_only_after_it_has_held():
    kinds = ["idle"] * 5 + ["access"] * 3 + ["idle"] * 5 + ["access"] * 8
    samples = [_sample(float(i), k) for i, k in enumerate(kinds)]
    (spans,) = spans_by_host(samples).values()
    assert [(s.verdict_kind, s.start_t, s.end_t) for s in spans] == [
        ("idle", 0.0, 12.0), ("access", 13.0, 20.0)]
    assert len(spans[0].samples) == 13  # the 3-second excursion stays inside
    assert current_span(samples, "h", at=15.0).verdict_kind == "idle"  # not held yet at 15
    assert current_span(samples, "h", at=18.0).verdict_kind == "access"


def test_the_report_lists_spans_per_host_not_one_median():
    text = render_transcript(transcript.read(RUN2))
    section = text[text.index("## Memory bandwidth and the live gap"):]
    # the headline is the triage's dominant finding over the steady phases (the waste
    # the restart fixed), never the verdict of the last seconds
    assert "### localhost: **high · wasted-traffic · 80 % · memory moves 5.0x" in section
    for host in ("viadmon", "viapynvml"):  # these two were sampled near the floor only
        assert f"### {host}: **moderate · near-floor · " in section
    assert "Verdict changes" not in section
    assert section.count("| wasted-traffic |") == 3 and section.count("| near-floor |") == 3


def test_the_hypotheses_footer_leads_with_the_live_gap_per_host():
    from perftriage.core.model.reducer import apply
    from perftriage.core.model.state import SessionState
    from perftriage.ui.widgets.hypotheses import live_gap_line

    state = SessionState()
    for e in transcript.read(RUN2).events:
        apply(state, e)
    line = live_gap_line(state).plain
    assert line.startswith("live gap ")
    for host in ("localhost", "viadmon", "viapynvml"):
        assert f"on {host} · near-floor since" in line
