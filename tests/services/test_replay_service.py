"""The replay service: annotations go to a derived session, never to the
original; they stay where they were made when the player seeks; the
background indexer and the UI thread share the timeline safely."""

import hashlib
import shutil

from perftriage.core.model import events as ev
from perftriage.core.model import reducer
from perftriage.core.replay.state_at import state_json
from perftriage.core.store import transcript
from perftriage.services.investigation.replay import Replayer
from tests.support.helpers import EXAMPLE_SESSION


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_original_unchanged_and_notes_go_to_a_derived_session(tmp_path):
    original = tmp_path / "example-moe-gap.jsonl"
    shutil.copy(EXAMPLE_SESSION, original)
    before, mtime = _digest(original), original.stat().st_mtime_ns
    out = tmp_path / "sessions"
    out.mkdir()
    r = Replayer(original, sessions_dir=out)
    r.player.seek_time(200.0)
    r.session.emit(ev.NoteAdded(text="replayed: the gap was known at 3:20"))
    hyp = r.session.new_id("h")
    r.session.emit(ev.HypothesisAdded(hyp_id=hyp, title="added while replaying"))
    r.session.emit(ev.ProbeQueued(probe_id="x", host="gpu-a", kind="which"))  # refused: live only
    assert "x" not in r.session.state.probes
    r.player.seek(len(r.timeline) if r.timeline.complete else 10**9)
    derived = r.close()
    assert _digest(original) == before and original.stat().st_mtime_ns == mtime
    assert derived is not None and derived.parent == out
    tr = transcript.read(derived)
    assert tr.header["derived_from"] == "example-moe-gap.jsonl"
    original_events = transcript.read(original).events
    assert len(tr.events) == len(original_events) + 2
    notes = [e for e in tr.events if isinstance(e, ev.NoteAdded)]
    assert len(notes) == 1 + sum(isinstance(e, ev.NoteAdded) for e in original_events)
    added = next(e for e in tr.events if isinstance(e, ev.NoteAdded) and "replayed" in e.text)
    assert added.t <= 200.0
    times = [e.t for e in tr.events]
    assert times == sorted(times)  # the additions sit at the moment they were made
    assert hyp.startswith("rh") and any(h.hyp_id == hyp for h in r.session.state.hypotheses)


def test_a_replay_of_a_derived_session_adds_ids_of_its_own(tmp_path):
    out = tmp_path / "sessions"
    out.mkdir()
    first = Replayer(EXAMPLE_SESSION, sessions_dir=out)
    h1 = first.session.new_id("h")
    first.session.emit(ev.HypothesisAdded(hyp_id=h1, title="first replay"))
    derived = first.close()
    assert transcript.read(derived).header["derivation"] == 1
    second = Replayer(derived, sessions_dir=out)
    second.player.seek(0)  # the first replay's addition lies ahead: its id is taken
    h2 = second.session.new_id("h")
    second.session.emit(ev.HypothesisAdded(hyp_id=h2, title="second replay"))
    again = second.close()
    assert h1 == "rh1" and h2 == "r2h1"
    assert transcript.read(again).header["derivation"] == 2
    titles = {h.hyp_id: h.title for h in reducer.replay(transcript.read(again).events).hypotheses}
    assert titles[h1] == "first replay" and titles[h2] == "second replay"


def test_additions_stay_where_they_were_made_across_seeks(tmp_path):
    r = Replayer(EXAMPLE_SESSION, sessions_dir=tmp_path)
    r.timeline.scan()
    n = len(r.timeline)
    r.player.seek(n // 2)
    r.session.emit(ev.NoteAdded(text="half way"))
    at_half = state_json(r.session.state, 0)
    r.player.seek(n)
    assert any(x.text == "half way" for x in r.session.state.notes)
    r.player.seek(n // 2 - 1)
    assert not any(x.text == "half way" for x in r.session.state.notes)
    r.player.seek(n // 2)
    assert state_json(r.session.state, 0) == at_half
    r.close()


def test_background_indexing_while_the_player_seeks(tmp_path):
    from tests.bench.long_session import generate

    path = generate(tmp_path / "long.jsonl", 30_000)
    r = Replayer(path)
    r.start_indexing()
    r.player.seek(25_000)  # may need more of the index than is there yet: scans under the lock
    state_mid = state_json(r.session.state, 0)
    assert r.wait_indexed(timeout=120)
    assert len(r.timeline) == len(transcript.read(path).events)
    r.player.seek(0)
    r.player.seek(25_000)
    assert state_json(r.session.state, 0) == state_mid
    assert r.close() is None  # nothing added: no derived file


def test_the_bundled_example_plays_to_the_end_and_reports(tmp_path):
    """CI replays the seed investigation to its end (fake clock, 64x, quiet
    gaps capped at 2 s) and renders its report from the file."""
    from perftriage.core.report.from_file import render_file

    now = [0.0]
    r = Replayer(EXAMPLE_SESSION, speed=64, idle_limit=2.0, clock=lambda: now[0])
    r.toggle()
    steps = 0
    while r.player.playing:
        now[0] += 0.05
        r.tick()
        steps += 1
    r.timeline.scan()
    assert r.player.position == len(r.timeline) and r.session.state.ended
    assert steps < 20 * 60  # 11 min of session in well under a minute of fake time
    state = r.session.state
    assert len(state.probes) == 7 and len(state.hypotheses) == 11
    assert state.hypotheses[0].status == "testing"
    assert state.servers["sglang"].state == "ready"
    kinds = {m.kind for m in r.timeline.markers}
    # a transcript made before the live triage: the recording's triage marks its changes
    assert kinds == {"probe", "hypothesis", "note", "gap", "server", "triage"}
    text = render_file(EXAMPLE_SESSION)
    assert "gap 30.2x" in text and "--moe-runner-backend flashinfer_cutedsl" in text
    r.close()
