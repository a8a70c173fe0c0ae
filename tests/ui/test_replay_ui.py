"""The replay screen: a Pilot-driven live session replays to the same state;
keys move the player; notes go to a derived session; a snapshot of it."""

from __future__ import annotations

import hashlib
import shutil

from perftriage.ui.app import PerftriageApp
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.investigation.replay import Replayer
from perftriage.ui.widgets.player_bar import PlayerBar
from perftriage.ui.widgets.probes import ProbesPane
from tests.support.helpers import (EXAMPLE_SESSION, capture_notifications, player_app,
                                  wait_for)


async def test_replay_equals_live(tmp_path):
    """Record a session driven by keys (a probe, a hypothesis with evidence,
    a status change, a note), then play its transcript to the end: the
    player's state is the live state."""
    live = PerftriageApp(Cockpit(sessions_dir=tmp_path, sample_interval=0.2))
    async with live.run_test(size=(160, 45)) as pilot:
        await pilot.press("i", *"json", "enter")
        await wait_for(lambda: any(p.finished for p in live.session.state.probes.values()))
        await pilot.press("H", *"json is fine", "enter", *"nb", "enter")
        await pilot.pause()
        await pilot.press("plus", "s")
        await pilot.press("N", *"done here", "enter")
        await wait_for(lambda: live.session.state.hosts["localhost"].sample is not None)
        await pilot.press("q")
    a = live.session.state
    path = next(tmp_path.glob("*.jsonl"))
    r = Replayer(path)
    r.timeline.scan()
    r.player.seek(len(r.timeline))
    b = r.session.state
    assert a.probes == b.probes and len(b.probes) == 1
    assert a.hypotheses == b.hypotheses and b.hypotheses[0].status == "testing"
    assert a.notes == b.notes and a.ended and b.ended
    assert a.event_count == b.event_count and a.last_t == b.last_t
    for name in a.hosts:
        ha, hb = a.hosts[name], b.hosts[name]
        assert (ha.conn_state, ha.sample, list(ha.cpu_history)) == \
               (hb.conn_state, hb.sample, list(hb.cpu_history))


async def test_keys_play_step_back_and_jump_to_markers():
    now = [100.0]
    app, r = player_app(at=200.0, clock=lambda: now[0])
    async with app.run_test(size=(160, 45)) as pilot:
        start = r.player.position
        await pilot.press("full_stop", "full_stop", "comma")
        assert r.player.position == start + 1
        await pilot.press("greater_than_sign")  # next marker: the first probe finishing
        assert r.session.state.probes["p1"].status == "ok"
        assert "probe: p1" in app.screen.query_one(PlayerBar).message
        await pilot.press("less_than_sign")
        assert r.player.position < start
        await pilot.press("right_curly_bracket", "right_curly_bracket")
        assert r.player.speed == 4.0
        before = r.player.t
        await pilot.press("space")
        now[0] += 5.0  # 5 s of the fake clock at 4x: 20 s of the session
        await wait_for(lambda: r.player.t >= before + 19)
        await pilot.press("space")
        assert not r.player.playing and r.player.t <= before + 20
        await pilot.press("t", *"7:30", "enter")
        assert 449 <= r.player.t <= 450 and r.session.state.hypotheses[0].status == "testing"
        await pilot.pause(0.2)
        assert app.screen.query_one(ProbesPane).table.row_count == 7
        await pilot.press("t", *"3:00", "enter")  # back before the probes: rows go
        await pilot.pause(0.2)
        assert app.screen.query_one(ProbesPane).table.row_count == 0
        await pilot.press("q")


async def test_end_clears_the_marker_line_it_left_behind():
    """`>` then `end`: the bar still named the hypothesis jumped to."""
    app, r = player_app(at=200.0)
    async with app.run_test(size=(160, 45)) as pilot:
        bar = app.screen.query_one(PlayerBar)
        await pilot.press("greater_than_sign")
        assert bar.message.startswith("probe: p1")
        await pilot.press("end")
        assert r.player.at_end and bar.message == ""
        await pilot.pause(0.2)
        assert "■ end" in str(bar.render()) and "p1" not in str(bar.render())
        await pilot.press("q")


async def test_host_keys_are_off_and_a_note_goes_to_a_derived_session(tmp_path):
    original = tmp_path / "example-moe-gap.jsonl"
    shutil.copy(EXAMPLE_SESSION, original)
    digest = hashlib.sha256(original.read_bytes()).hexdigest()
    out = tmp_path / "out"
    out.mkdir()
    app, r = player_app(original, at=300.0, sessions_dir=out)
    seen = capture_notifications(app)
    async with app.run_test(size=(160, 45)) as pilot:
        probes = list(r.session.state.probes)
        await pilot.press("i")
        assert any("touch a host" in m for m, _ in seen)
        assert list(r.session.state.probes) == probes and type(app.screen).__name__ == "ReplayScreen"
        await pilot.press("N", *"seen in replay", "enter")
        assert r.session.state.notes[-1].text == "seen in replay"
        await pilot.press("q")
    r.close()
    assert hashlib.sha256(original.read_bytes()).hexdigest() == digest
    derived = list(out.glob("*-annotated.jsonl"))
    assert len(derived) == 1 and b"seen in replay" in derived[0].read_bytes()


def test_replay_screen_snapshot(snap_compare):
    app, _ = player_app(at=7 * 60 + 30.0)
    assert snap_compare(app, terminal_size=(160, 45))
