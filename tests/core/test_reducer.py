from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply, replay
from perftriage.core.model.state import SessionState


def test_probe_lifecycle():
    s = replay(
        [
            ev.ProbeQueued(probe_id="p1", host="h", kind="import", args=["os"], t=1),
            ev.ProbeStarted(probe_id="p1", t=2),
            ev.ProbeOutput(probe_id="p1", data="out", t=3),
            ev.ProbeOutput(probe_id="p1", stream="stderr", data="err", t=3),
            ev.ProbeFinished(probe_id="p1", status="failed", exit_status=1, duration_s=1.5, t=4),
        ]
    )
    p = s.probes["p1"]
    assert (p.status, p.exit_status, p.duration_s) == ("failed", 1, 1.5)
    assert (p.stdout, p.stderr) == ("out", "err")
    assert (p.queued_t, p.started_t, p.finished_t) == (1, 2, 4)
    assert p.label == "import os"
    assert s.event_count == 5 and s.last_t == 4


def test_events_for_unknown_probe_are_ignored_but_counted():
    s = SessionState()
    apply(s, ev.ProbeFinished(probe_id="nope", status="ok"))
    assert s.probes == {} and s.event_count == 1


def test_host_sample_builds_history_and_marks_up():
    s = SessionState()
    apply(s, ev.HostStatus(host="h", state="connecting"))
    for i in range(3):
        apply(
            s,
            ev.HostSample(
                host="h", cpu_pct=10.0 * i, gpus=[ev.GpuSample(index=0, util_pct=i, power_w=100 + i)]
            ),
        )
    h = s.hosts["h"]
    assert h.conn_state == "up"
    assert list(h.cpu_history) == [0, 10, 20]
    assert list(h.util_history[0]) == [0, 1, 2]
    assert list(h.power_history[0]) == [100, 101, 102]


def test_host_status_reason():
    s = replay([ev.HostStatus(host="h", state="retrying", reason="connection refused")])
    assert (s.hosts["h"].conn_state, s.hosts["h"].reason) == ("retrying", "connection refused")


def test_log_lines_ring_is_bounded():
    s = SessionState(log_ring=5)
    apply(s, ev.LogSourceOpened(source_id="l1", host="h", path="/x"))
    apply(s, ev.LogLines(source_id="l1", lines=[str(i) for i in range(8)], dropped=2))
    src = s.logs["l1"]
    assert list(src.lines) == ["3", "4", "5", "6", "7"]
    assert src.total_lines == 8 and src.dropped == 2
    apply(s, ev.LogSourceClosed(source_id="l1", reason="eof"))
    assert not src.open and src.closed_reason == "eof"


def test_hypotheses_add_update_reorder_delete_and_evidence():
    s = replay(
        [
            ev.HypothesisAdded(hyp_id="h1", title="MoE kernel slow"),
            ev.HypothesisAdded(hyp_id="h2", title="NCCL"),
            ev.HypothesisAdded(hyp_id="h3", title="top", priority=0),
        ]
    )
    assert [h.hyp_id for h in s.hypotheses] == ["h3", "h1", "h2"]
    apply(s, ev.HypothesisUpdated(hyp_id="h2", status="supported", note="n", priority=0))
    assert [h.hyp_id for h in s.hypotheses] == ["h2", "h3", "h1"]
    assert s.hypothesis("h2").status == "supported" and s.hypothesis("h2").note == "n"
    apply(s, ev.EvidenceLinked(hyp_id="h1", ref_id="p1", stance="against"))
    apply(s, ev.EvidenceLinked(hyp_id="h1", ref_id="p1", stance="for"))  # re-link replaces
    assert [(e.ref_id, e.stance) for e in s.hypothesis("h1").evidence] == [("p1", "for")]
    apply(s, ev.EvidenceUnlinked(hyp_id="h1", ref_id="p1"))
    assert s.hypothesis("h1").evidence == []
    apply(s, ev.HypothesisDeleted(hyp_id="h3"))
    assert [h.hyp_id for h in s.hypotheses] == ["h2", "h1"]


def test_notes_gaps_and_end():
    s = replay(
        [
            ev.NoteAdded(text="restarting", t=5, wall=100),
            ev.GapComputed(floor_ms=3.2, ceiling_tps=312.5, bandwidth_gbs_total=14400,
                           measured_ms=97, gap=30.3),
            ev.SessionEnded(),
        ]
    )
    assert s.notes[0].text == "restarting" and s.notes[0].t == 5
    assert s.gaps[0].gap == 30.3
    assert s.ended


def test_versions_bump_only_touched_sections():
    s = SessionState()
    before = dict(s.versions)
    apply(s, ev.NoteAdded(text="x"))
    assert s.versions["notes"] == before["notes"] + 1
    assert s.versions["probes"] == before["probes"]


def test_every_event_class_is_registered_for_decoding():
    # ALL_EVENTS is built from Event's subclasses: one defined below it in
    # events.py would be missed, and its transcript lines would not decode
    from perftriage.core.model import events as ev

    assert set(ev.tagged_events()) == set(ev.ALL_EVENTS)
    assert len(ev.ALL_EVENTS) == len({c.__struct_config__.tag for c in ev.ALL_EVENTS})
    assert ev.decode(ev.encode(ev.NoteAdded(text="n"))) == ev.NoteAdded(text="n")
