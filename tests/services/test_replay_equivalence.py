"""Replay is not a separate feature: the saved events, fed through the same
reducer, rebuild exactly the state the live session had."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perftriage.core.model import events as ev
from perftriage.services.investigation.session import Session

ids = st.sampled_from(["p1", "p2", "p3"])
hyps = st.sampled_from(["h1", "h2"])
text = st.text(max_size=20)

event_strategy = st.one_of(
    st.builds(ev.ProbeQueued, probe_id=ids, host=st.sampled_from(["a", "b"]),
              kind=st.sampled_from(["import", "shell"]), args=st.lists(text, max_size=3)),
    st.builds(ev.ProbeStarted, probe_id=ids),
    st.builds(ev.ProbeOutput, probe_id=ids, stream=st.sampled_from(["stdout", "stderr"]),
              data=text),
    st.builds(ev.ProbeFinished, probe_id=ids,
              status=st.sampled_from(["ok", "failed", "error", "timeout", "cancelled"]),
              exit_status=st.none() | st.integers(0, 255)),
    st.builds(ev.HypothesisAdded, hyp_id=hyps, title=text,
              priority=st.none() | st.integers(0, 3)),
    st.builds(ev.HypothesisUpdated, hyp_id=hyps, status=st.none() | st.sampled_from(
        ["open", "testing", "supported", "refuted", "parked"]), priority=st.none() | st.integers(0, 3)),
    st.builds(ev.HypothesisDeleted, hyp_id=hyps),
    st.builds(ev.EvidenceLinked, hyp_id=hyps, ref_id=ids,
              stance=st.sampled_from(["for", "against"])),
    st.builds(ev.NoteAdded, text=text),
    st.builds(ev.LogLines, source_id=st.sampled_from(["l1", "l2"]), lines=st.lists(text, max_size=5)),
    st.builds(ev.HostSample, host=st.sampled_from(["a", "b"]),
              cpu_pct=st.none() | st.floats(0, 100),
              gpus=st.lists(st.builds(ev.GpuSample, index=st.integers(0, 1),
                                      util_pct=st.none() | st.floats(0, 100)), max_size=2)),
    st.builds(ev.HostStatus, host=st.sampled_from(["a", "b"]),
              state=st.sampled_from(["connecting", "up", "retrying", "down"]),
              reason=st.none() | text),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(event_strategy, max_size=40))
def test_replayed_state_equals_live_state(tmp_path_factory, events):
    live = Session("eq", hosts=["a", "b"], sessions_dir=tmp_path_factory.mktemp("s"))
    for e in events:
        live.emit(e)
    live.close()
    replayed, tr = Session.from_transcript(live.path)
    assert tr.problems == []
    a, b = live.state, replayed.state
    assert a.probes == b.probes
    assert a.hypotheses == b.hypotheses
    assert a.notes == b.notes
    assert {k: list(v.lines) for k, v in a.logs.items()} == {k: list(v.lines) for k, v in b.logs.items()}
    assert a.hosts.keys() == b.hosts.keys()
    for name in a.hosts:
        ha, hb = a.hosts[name], b.hosts[name]
        assert (ha.conn_state, ha.reason, ha.sample) == (hb.conn_state, hb.reason, hb.sample)
        assert list(ha.cpu_history) == list(hb.cpu_history)
    assert a.event_count == b.event_count
