"""The replay player's core: state at a moment, keyframe seeks, stepping
back, markers, speed and idle limit on a fake clock (no sleeps)."""

import json

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.model import events as ev
from perftriage.core.model import reducer
from perftriage.core.clock import parse_time
from perftriage.core.replay.state_at import state_at, state_json
from perftriage.core.replay.player import Player
from perftriage.core.replay.timeline import Timeline, new_state
from perftriage.core.store import transcript


def _events():
    """A small investigation with known times (seconds)."""
    out = [ev.HostStatus(host="gpu-a", state="up", t=0.0)]
    for k in range(40):
        out.append(ev.HostSample(host="gpu-a", cpu_pct=float(k), t=1.0 + k,
                                 gpus=[ev.GpuSample(index=0, util_pct=float(k))]))
    out += [
        ev.HypothesisAdded(hyp_id="h1", title="MoE backend", t=2.5),
        ev.ProbeQueued(probe_id="p1", host="gpu-a", kind="import", args=["flashinfer.cute"], t=3.0),
        ev.ProbeStarted(probe_id="p1", t=3.2),
        ev.ProbeFinished(probe_id="p1", status="failed", summary="ModuleNotFoundError", t=5.0),
        ev.LogLines(source_id="l1", lines=["[2026-11-28 09:16:06 TP0] Decode batch, #running-req: 1, "
                                           "#token: 852, token usage: 0.00, cuda graph: True, gen "
                                           "throughput (token/s): 10.31, #queue-req: 0"], t=6.0),
        ev.LogLines(source_id="l1", lines=["RuntimeError: CUDA error: out of memory"], t=7.0),
        ev.HypothesisUpdated(hyp_id="h1", status="testing", t=8.0),
        ev.EvidenceLinked(hyp_id="h1", ref_id="p1", stance="for", summary="no cute", t=8.5),
        ev.NoteAdded(text="restart with flashinfer_cutedsl", t=9.0),
        ev.ServerEvent(server="sglang", host="gpu-a", state="starting", t=10.0),
        ev.GapComputed(floor_ms=3.2, ceiling_tps=312.5, bandwidth_gbs_total=14400.0,
                       measured_ms=97.0, gap=30.3, t=11.0),
        ev.ProbeQueued(probe_id="p2", host="gpu-a", kind="which", args=["nsys"], t=100.0),
        ev.SessionEnded(t=120.0),
    ]
    out.sort(key=lambda e: e.t)
    return out


@pytest.fixture
def session_file(tmp_path):
    path = tmp_path / "20261128-092000-moe.jsonl"
    w = transcript.TranscriptWriter(path, transcript.make_header("2026-11-28T09:20:00", ["gpu-a"],
                                                                  name="moe"), background=False)
    for e in _events():
        w.write(e)
    w.close()
    return path


def _independent(path, t):
    """The state at t, computed without the replay code: read it all, filter, reduce."""
    tr = transcript.read(path)
    state = new_state(tr.header, "moe")
    return reducer.replay([e for e in tr.events if e.t <= t], state)


def _fingerprint(state):
    doc = state_json(state, 0.0)
    doc["logs"] = {k: list(v.lines) for k, v in state.logs.items()}
    doc["history"] = {k: list(h.cpu_history) for k, h in state.hosts.items()}
    doc["versions"] = dict(state.versions)
    doc["count"] = state.event_count
    return json.dumps(doc, sort_keys=True, default=str)


@pytest.mark.parametrize("t", [0.0, 3.0, 3.1, 4.99, 5.0, 8.0, 50.0, 120.0])
def test_state_at_equals_independently_computed_state(session_file, t):
    state, _ = state_at(session_file, t)
    assert state_json(state, t) == state_json(_independent(session_file, t), t)


def test_probe_status_at_t_and_probes_not_yet_queued_are_absent(session_file):
    def probes(t):
        state, _ = state_at(session_file, t)
        return {p["id"]: p["status"] for p in state_json(state, t)["probes"]}

    assert probes(2.9) == {}
    assert probes(3.0) == {"p1": "queued"}
    assert probes(4.0) == {"p1": "running"}
    assert probes(5.0) == {"p1": "failed"}
    assert probes(120) == {"p1": "failed", "p2": "queued"}


def test_parse_time_forms():
    assert parse_time("12.5") == 12.5
    assert parse_time("01:30") == 90
    assert parse_time("1:02:03.5") == 3723.5
    assert parse_time("end") is None
    for bad in ("1:99", "x", "1:2:3:4", "nan"):
        with pytest.raises(ValueError):
            parse_time(bad)


def test_cli_at_json_and_exit_2_outside(session_file, tmp_path):
    runner = CliRunner()
    r = runner.invoke(cli, ["--sessions-dir", str(tmp_path), "replay", session_file.name,
                            "--at", "00:05", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert set(doc) == {"t", "hosts", "probes", "hypotheses", "gaps", "notes", "live_gaps",
                         "triage"}
    assert doc["t"] == 5.0
    assert doc["probes"] == [{"id": "p1", "host": "gpu-a", "kind": "import",
                              "args": ["flashinfer.cute"], "status": "failed",
                              "summary": "ModuleNotFoundError"}]
    assert doc["hypotheses"][0]["status"] == "open"
    assert doc["hosts"]["gpu-a"]["state"] == "up" and doc["hosts"]["gpu-a"]["gpus"][0]["index"] == 0
    for outside in ("121", "-1", "2:00:00"):
        r = runner.invoke(cli, ["replay", str(session_file), "--at", outside, "--json"])
        assert r.exit_code == 2, (outside, r.output)
    r = runner.invoke(cli, ["--sessions-dir", str(tmp_path), "replay", "--latest", "--json"])
    assert r.exit_code == 0 and json.loads(r.output)["t"] == 120.0
    r = runner.invoke(cli, ["--sessions-dir", str(tmp_path), "replay", "nope", "--json"])
    assert r.exit_code == 2 and "no session 'nope'" in r.output


def _walk_positions(player, positions):
    out = {}
    for p in positions:
        player.seek(p)
        out[p] = _fingerprint(player.state)
    return out


def test_back_then_forward_gives_identical_states(session_file):
    tl = Timeline.open(session_file, spacing=4)  # many keyframes: seeks restore them
    player = Player(tl)
    forward = {}
    tl.scan()
    n = len(tl)
    for p in range(n + 1):
        player.seek(p)
        forward[p] = _fingerprint(player.state)
    for p in range(n, -1, -1):  # one event back at a time
        player.seek(p)
        assert _fingerprint(player.state) == forward[p], p
    player.seek(n)
    player.step(-7)
    player.step(+3)
    assert _fingerprint(player.state) == forward[n - 4]
    assert _fingerprint(player.state) == _fingerprint(_independent(session_file, tl.times[n - 5]))


def test_seek_to_markers(session_file):
    tl = Timeline.open(session_file)
    player = Player(tl)
    kinds = []
    while (m := player.next_marker()) is not None:
        kinds.append(m.kind)
        assert player.position == m.index + 1
        if m.kind == "probe":
            assert player.state.probes["p1"].status == "failed"
        if m.kind == "hypothesis" and "→" in m.label:  # a status change
            assert player.state.hypotheses[0].status == "testing"
        elif m.kind == "hypothesis":  # added: a beat of the story too
            assert " + " in m.label and player.state.hypotheses
    assert kinds == ["hypothesis", "probe", "error", "hypothesis", "note", "server", "gap"]
    back = player.prev_marker()
    assert back.kind == "server" and player.state.servers["sglang"].state == "starting"
    assert not player.state.gaps


def test_speed_and_idle_limit_on_a_fake_clock(session_file):
    tl = Timeline.open(session_file)
    player = Player(tl, speed=2.0)
    player.play(now=100.0)
    player.tick(100.0)
    assert player.t == 0.0  # host.status at t=0 is due at once
    player.tick(101.0)  # 2 s of session time
    assert player.t == 2.0
    player.pause()
    player.tick(150.0)  # paused: nothing moves
    assert player.t == 2.0
    player.play(now=150.0)
    player.set_speed(64)
    player.tick(151.0)  # 64 s of session time: every event up to 66 s
    assert player.t == 40.0
    # the quiet gap 40 -> 100 s plays as 5 s with an idle limit of 5
    player.pause()
    player.set_speed(1)
    player.idle_limit = 5.0
    player.play(now=200.0)
    player.tick(204.9)
    assert player.t == 40.0
    player.tick(205.0)
    assert player.t == 100.0
    player.tick(210.0)
    assert player.t == 120.0 and not player.playing  # the end stops playback


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_hosts = st.sampled_from(["gpu-a", "gpu-b"])
_event = st.one_of(
    st.builds(ev.HostSample, host=_hosts, cpu_pct=st.none() | st.floats(0, 100),
              gpus=st.lists(st.builds(ev.GpuSample, index=st.integers(0, 1),
                                      util_pct=st.none() | st.floats(0, 100)), max_size=2)),
    st.builds(ev.HostStatus, host=_hosts,
              state=st.sampled_from(["connecting", "up", "retrying", "down"])),
    st.builds(ev.LogLines, source_id=st.just("l1"), lines=st.lists(st.text(max_size=9), max_size=3)),
    st.builds(ev.ProbeQueued, probe_id=st.sampled_from(["p1", "p2"]), host=_hosts,
              kind=st.just("which"), args=st.just(["nsys"])),
    st.builds(ev.ProbeFinished, probe_id=st.sampled_from(["p1", "p2"]),
              status=st.sampled_from(["ok", "failed"])),
    st.builds(ev.NoteAdded, text=st.text(max_size=9)),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(_event, st.sampled_from([0.0, 0.5, 1.0])), max_size=30),
       st.floats(0, 16), st.booleans())
def test_state_at_skipping_equals_the_full_reduction(tmp_path_factory, steps, t, torn):
    """The fast path (log lines undecoded, superseded samples skipped) shows
    exactly what reducing every event shows, also with a torn last line."""
    path = tmp_path_factory.mktemp("at") / "s.jsonl"
    w = transcript.TranscriptWriter(path, transcript.make_header("x", ["gpu-a", "gpu-b"]),
                                    background=False)
    now = 0.0
    for e, dt in steps:
        now += dt
        e.t = now
        w.write(e)
    w.close()
    if torn and steps:
        data = path.read_bytes()
        data = data[: data.rindex(b'{"type":"session.summary"')]
        path.write_bytes(data[:-5])
    t = min(t, max((e.t for e in transcript.read(path).events), default=0.0))
    state, _ = state_at(path, t)
    assert state_json(state, t) == state_json(_independent(path, t), t)


def test_stepping_back_through_recent_snapshots_matches_a_fresh_seek(tmp_path):
    """A seek leaves a snapshot behind it (every 1024 events); stepping back
    from there must give what a fresh player seeking straight there gives,
    also across the snapshot's position and with an addition in between."""
    from tests.bench.long_session import generate

    path = generate(tmp_path / "long.jsonl", 5000)
    tl = Timeline.open(path)
    tl.scan()
    player = Player(tl)
    player.seek(4100)
    for _ in range(6):
        player.step(-1)
    assert player.position == 4094 and 4096 > max(player._recent) >= 3072
    fresh = Player(Timeline.open(path))
    fresh.seek(4094)
    assert _fingerprint(player.state) == _fingerprint(fresh.state)
    player.seek(3075)
    player.step(-5)  # below the snapshot at 3072: from the keyframe again
    fresh.seek(3070)
    assert _fingerprint(player.state) == _fingerprint(fresh.state)
    player.add(ev.NoteAdded(text="here", t=player.t))
    fresh.add(ev.NoteAdded(text="here", t=fresh.t))
    player.seek(4500)
    player.step(-400)
    fresh.seek(4100)
    assert _fingerprint(player.state) == _fingerprint(fresh.state)
    assert any(n.text == "here" for n in player.state.notes)


def test_timeline_bar_cells_place_cursor_and_rank_markers():
    from perftriage.core.replay.timeline import Marker
    from perftriage.core.view.timeline_bar import cells

    marks = [Marker(0, 10.0, "probe", "p1"), Marker(1, 10.2, "error", "oom"),
             Marker(2, 90.0, "note", "n")]
    row = cells(marks, duration=100.0, width=11, t=50.0)
    assert len(row) == 11
    assert row[1] == ("✖", "error")  # an error outranks a probe in the same cell
    assert row[5] == ("█", "cursor") and row[9] == ("✎", "note")
    assert row[3][1] == "played" and row[7][1] is None
    assert cells(marks, duration=0.0, width=0, t=0.0) == []


def test_player_at_outside_the_session_is_exit_2(session_file):
    r = CliRunner().invoke(cli, ["replay", str(session_file), "--at", "3:00"])
    assert r.exit_code == 2 and "outside the session" in r.output
