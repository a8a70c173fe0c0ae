"""Hypotheses: reducer events, transcript round trip, and keyboard flows."""

from __future__ import annotations

from perftriage.ui.app import PerftriageApp
from perftriage.core.model import events as ev
from perftriage.core.store import transcript
from perftriage.core.model.reducer import apply, replay
from perftriage.core.model.state import SessionState
from perftriage.services.cockpit import Cockpit
from perftriage.services.investigation.session import Session
from perftriage.ui.widgets.hypotheses import HypothesesPane

from tests.support.helpers import EXAMPLE_SESSION, replay_app, wait_for

# --- reducer ---------------------------------------------------------------------


def test_added_appends_or_inserts_at_priority():
    s = replay([
        ev.HypothesisAdded(hyp_id="h1", title="a", note="n", status="testing", t=1),
        ev.HypothesisAdded(hyp_id="h2", title="b", t=2),
        ev.HypothesisAdded(hyp_id="h3", title="c", priority=1, t=3),
    ])
    assert [h.hyp_id for h in s.hypotheses] == ["h1", "h3", "h2"]
    h1 = s.hypothesis("h1")
    assert (h1.title, h1.note, h1.status, h1.created_t) == ("a", "n", "testing", 1)
    assert s.versions["hypotheses"] == 3


def test_updated_changes_only_given_fields_and_moves():
    s = replay([ev.HypothesisAdded(hyp_id=f"h{i}", title=f"t{i}") for i in range(1, 4)])
    apply(s, ev.HypothesisUpdated(hyp_id="h1", title="new", t=5))
    h1 = s.hypothesis("h1")
    assert (h1.title, h1.note, h1.status, h1.updated_t) == ("new", "", "open", 5)
    apply(s, ev.HypothesisUpdated(hyp_id="h1", status="refuted"))
    assert h1.status == "refuted" and h1.title == "new"
    apply(s, ev.HypothesisUpdated(hyp_id="h1", priority=99))  # clamped to the bottom
    assert [h.hyp_id for h in s.hypotheses] == ["h2", "h3", "h1"]
    apply(s, ev.HypothesisUpdated(hyp_id="h1", priority=0))
    assert [h.hyp_id for h in s.hypotheses] == ["h1", "h2", "h3"]


def test_updates_to_unknown_hypotheses_are_ignored():
    s = SessionState()
    for e in (ev.HypothesisUpdated(hyp_id="x", title="y"), ev.HypothesisDeleted(hyp_id="x"),
              ev.EvidenceLinked(hyp_id="x", ref_id="p1"), ev.EvidenceUnlinked(hyp_id="x")):
        apply(s, e)
    assert s.hypotheses == [] and s.versions["hypotheses"] == 0 and s.event_count == 4


def test_deleted_removes():
    s = replay([ev.HypothesisAdded(hyp_id="h1", title="a"), ev.HypothesisAdded(hyp_id="h2", title="b"),
                ev.HypothesisDeleted(hyp_id="h1")])
    assert [h.hyp_id for h in s.hypotheses] == ["h2"]


def test_evidence_link_relink_and_unlink_by_kind_and_id():
    s = replay([
        ev.HypothesisAdded(hyp_id="h1", title="a"),
        ev.EvidenceLinked(hyp_id="h1", ref_kind="probe", ref_id="p1", stance="for", summary="s", t=2),
        ev.EvidenceLinked(hyp_id="h1", ref_kind="log", ref_id="p1", stance="against", t=3),
        ev.EvidenceLinked(hyp_id="h1", ref_kind="probe", ref_id="p1", stance="against", t=4),
    ])
    ev_list = s.hypothesis("h1").evidence
    assert [(e.ref_kind, e.ref_id, e.stance, e.t) for e in ev_list] == [
        ("log", "p1", "against", 3), ("probe", "p1", "against", 4)]
    apply(s, ev.EvidenceUnlinked(hyp_id="h1", ref_kind="log", ref_id="p1"))
    assert [(e.ref_kind, e.ref_id) for e in s.hypothesis("h1").evidence] == [("probe", "p1")]


def test_note_and_gap_events():
    s = replay([ev.NoteAdded(text="restarting", host="gpu-a", t=3, wall=100.0),
                ev.GapComputed(floor_ms=3.2, ceiling_tps=312.5, bandwidth_gbs_total=14400,
                               measured_ms=97, gap=30.3, efficiency_pct=3.3)])
    assert [(n.text, n.host, n.t) for n in s.notes] == [("restarting", "gpu-a", 3)]
    assert s.gaps[0].gap == 30.3


def test_evidence_links_survive_a_transcript_round_trip(tmp_path):
    session = Session(name="rt", hosts=["h"], sessions_dir=tmp_path)
    for e in [
        ev.HypothesisAdded(hyp_id="h1", title="slow MoE path", note="check backend"),
        ev.HypothesisAdded(hyp_id="h2", title="NCCL", priority=0),
        ev.ProbeQueued(probe_id="p1", host="h", kind="import", args=["x"]),
        ev.ProbeFinished(probe_id="p1", status="failed", summary="ModuleNotFoundError"),
        ev.EvidenceLinked(hyp_id="h1", ref_kind="probe", ref_id="p1", stance="for", summary="x"),
        ev.EvidenceLinked(hyp_id="h2", ref_kind="log", ref_id="l1:7", stance="against"),
        ev.EvidenceLinked(hyp_id="h2", ref_kind="metric", ref_id="gap1", stance="for"),
        ev.EvidenceUnlinked(hyp_id="h2", ref_kind="metric", ref_id="gap1"),
        ev.HypothesisUpdated(hyp_id="h1", status="supported", priority=0),
    ]:
        session.emit(e)
    session.close()
    live = session.state
    replayed, tr = Session.from_transcript(session.path)
    assert tr.problems == []

    def shape(state):
        return [(h.hyp_id, h.title, h.note, h.status,
                 [(e.ref_kind, e.ref_id, e.stance, e.summary, e.t) for e in h.evidence])
                for h in state.hypotheses]

    assert shape(replayed.state) == shape(live)
    assert shape(live)[0][4] == [("probe", "p1", "for", "x", live.hypotheses[0].evidence[0].t)]


# --- keyboard (Pilot) -------------------------------------------------------------


def _live_app(tmp_path):
    return PerftriageApp(Cockpit(sessions_dir=tmp_path, sample_interval=0.5))


async def _add(pilot, title: str, note: str = "") -> None:
    await pilot.press("H", *title, "enter", *note, "enter")
    await pilot.pause()


async def test_add_attach_last_probe_and_change_status_by_keyboard(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        # a finished probe to attach
        await pilot.press("i", *"json", "enter")
        await wait_for(lambda: any(p.finished for p in app.session.state.probes.values()))
        await _add(pilot, "json ok", "nb")
        state = app.session.state
        assert [(h.title, h.note, h.status) for h in state.hypotheses] == [
            ("json ok", "nb", "open")]
        pane = app.screen.query_one(HypothesesPane)
        assert app.focused is pane.table  # the new hypothesis is ready for its keys
        await pilot.press("plus")
        h = state.hypotheses[0]
        probe_id = next(iter(state.probes))
        assert [(e.ref_kind, e.ref_id, e.stance) for e in h.evidence] == [("probe", probe_id, "for")]
        await pilot.press("s")
        assert h.status == "testing"
        await pilot.press("s", "s")
        assert h.status == "refuted"
        await pilot.press("minus")  # re-link as against replaces the link
        assert [e.stance for e in h.evidence] == ["against"]
        await pilot.pause(0.1)
        row = [str(c) for c in pane.table.get_row(h.hyp_id)]
        assert "refuted" in row[1] and row[2].startswith("1 ")
        # details show the evidence with the probe's verdict
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "HypothesisDetailScreen"
        table = app.screen.query_one("#hyp-detail-evidence")
        assert table.row_count == 1
        assert "import json" in str(table.get_row_at(0)[4])
        await pilot.press("u")
        assert h.evidence == []
        await pilot.press("escape")
        await pilot.press("q")
    tr = transcript.read(next(tmp_path.glob("*.jsonl")))
    kinds = [type(e).__name__ for e in tr.events]
    for name in ("HypothesisAdded", "EvidenceLinked", "HypothesisUpdated", "EvidenceUnlinked"):
        assert name in kinds


async def test_edit_reorder_and_delete_by_keyboard(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await _add(pilot, "first")
        await _add(pilot, "second")
        state = app.session.state
        assert [h.title for h in state.hypotheses] == ["first", "second"]
        pane = app.screen.query_one(HypothesesPane)
        assert pane.selected_hyp_id == state.hypotheses[1].hyp_id
        await pilot.press("left_square_bracket")
        assert [h.title for h in state.hypotheses] == ["second", "first"]
        assert pane.selected_hyp_id == state.hypotheses[0].hyp_id  # cursor follows
        await pilot.press("ctrl+down")
        assert [h.title for h in state.hypotheses] == ["first", "second"]
        await pilot.press("e", "ctrl+u", *"2nd", "tab", *"nb", "enter")
        await wait_for(lambda: (state.hypotheses[1].title, state.hypotheses[1].note)
                       == ("2nd", "nb"))
        await pilot.press("d")
        await pilot.press("n")  # declined
        assert len(state.hypotheses) == 2
        await pilot.press("delete", "y")
        await wait_for(lambda: [h.title for h in state.hypotheses] == ["first"])
        await pilot.press("q")


async def test_empty_title_is_refused_inline(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("H", "enter", "enter")
        assert "needs a title" in str(app.screen.query_one("#hyp-form-error").render())
        await pilot.press("escape")
        assert app.session.state.hypotheses == []
        await pilot.press("q")


async def test_pick_a_log_line_as_evidence_and_notes_strip(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        app.session.emit(ev.LogSourceOpened(source_id="l1", host="localhost", path="/x.log"))
        app.session.emit(ev.LogLines(source_id="l1", lines=[
            "hello", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"]))
        await _add(pilot, "KV")
        await pilot.press("E")
        await pilot.pause()
        await pilot.press("minus")
        h = app.session.state.hypotheses[0]
        assert [(e.ref_kind, e.ref_id, e.stance) for e in h.evidence] == [("log", "l1:2", "against")]
        assert "OutOfMemoryError" in h.evidence[0].summary
        await pilot.press("escape")  # the picker stays open for more until Esc
        await pilot.pause()
        await pilot.press("N", *"restart", "enter")
        await pilot.pause(0.1)
        notes = str(app.screen.query_one("#hyp-notes").render())
        assert "restart" in notes
        await pilot.press("q")


async def test_roofline_panel_records_a_gap_event(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("G")
        await pilot.pause()
        screen = app.screen
        assert type(screen).__name__ == "RooflineScreen"
        for key, value in (("weights_gb", "46.08"), ("gpus", "8"), ("bandwidth_gbs", "1800"),
                           ("gpu", ""), ("measured_ms", "97")):
            screen.query_one(f"#rl-{key}").value = value
        await pilot.pause()
        assert "30.3x" in str(screen.query_one("#roofline-result").render())
        await pilot.press("enter")
        await pilot.pause()
        gaps = app.session.state.gaps
        assert len(gaps) == 1 and round(gaps[0].gap, 1) == 30.3 and gaps[0].floor_ms == 3.2
        assert gaps[0].inputs["weights_gb"] == 46.08
        # typed, not prefilled: the report claims no batch for it
        assert (gaps[0].measured_from, gaps[0].measured_batch) == ("typed in", None)
        await pilot.pause(0.1)
        assert "30.3x" in str(app.screen.query_one("#hyp-gap").render())
        await pilot.press("G")
        await pilot.pause()
        app.screen.query_one("#rl-gpus").value = "0"
        await pilot.pause()
        # the form names its own field, never a CLI flag
        said = str(app.screen.query_one("#roofline-result").render())
        assert "'GPUs'" in said and "--gpus" not in said
        await pilot.press("enter", "escape")
        assert len(app.session.state.gaps) == 1
        await pilot.press("q")


async def test_report_key_writes_next_to_the_transcript(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await _add(pilot, "hyp-x")
        await pilot.press("M")
        md = app.session.path.with_suffix(".md")
        await wait_for(md.exists)
        assert "hyp-x" in md.read_text()
        await pilot.press("q")


async def test_replay_is_read_only_but_shows_details_and_reports(tmp_path):
    copy = tmp_path / "example-moe-gap.jsonl"
    copy.write_bytes(EXAMPLE_SESSION.read_bytes())
    app = replay_app(copy)  # the report goes next to the replayed transcript
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0.1)
        pane = app.screen.query_one(HypothesesPane)
        pane.table.focus()
        await pilot.press("s")
        assert app.session.state.hypotheses[0].status == "testing"  # unchanged
        await pilot.press("enter")
        await pilot.pause()
        assert type(app.screen).__name__ == "HypothesisDetailScreen"
        await pilot.press("escape")
        await pilot.press("M")
        await wait_for(lambda: (tmp_path / "example-moe-gap.md").exists())
        await pilot.press("q")


async def test_palette_has_hypothesis_commands(tmp_path):
    app = _live_app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("ctrl+p", *"hypothesis: add")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(lambda: type(app.screen).__name__ == "HypothesisFormScreen")
        await pilot.press("escape", "q")
