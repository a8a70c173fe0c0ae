"""A replay past a baseline mark shows the before/after verdicts the cockpit
showed at that moment, not only the mark: the Gap view of ``perftriage
replay`` over the real H200 run (tests/fixtures/gpm/h200-run: its slow phase
marked as the baseline, its fast phase after) says what the live baseline
and ``perftriage compare`` say for the same seconds."""

from __future__ import annotations

import json
from pathlib import Path

from perftriage.core.compare.compare import Side, compare
from perftriage.core.compare.load import load
from perftriage.core.compare.slices import Window
from perftriage.core.model import events as ev
from perftriage.core.model.state import SessionState
from perftriage.core.store import investigations
from perftriage.core.view.baseline_view import GAP_METRICS, metric_phrases
from perftriage.services.cockpit import Cockpit
from perftriage.services.compare.baseline import Baseline
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.investigation.replay import Replayer
from perftriage.services.investigation.session import RECORDED, Session
from perftriage.services.investigation.watch import Watcher
from perftriage.ui.app import PerftriageApp
from tests.support.compare_recordings import real_events
from tests.support.helpers import wait_for

MARKED = ev.BaselineMarked(start=5.0, end=33.0, label="0:05–0:33", t=34.0)
AFTER_T = 70.0  # in the fast phase: its last 30 s against the slow one
HOST = "localhost"


def _recording(path: Path) -> Path:
    """The H200 run with its slow phase marked as the baseline at 0:34."""
    header = investigations.header_for("h200-baseline", "2026-12-01T01:00:00+00:00", [HOST])
    with open(path, "wb") as fh:
        fh.write(json.dumps(header).encode() + b"\n")
        for e in sorted([*real_events(), MARKED], key=lambda e: e.t):
            fh.write(ev.encode(e) + b"\n")
    return path


def _live_result(t: float):
    """What the cockpit's baseline said at ``t``, fed the run event by event."""
    session = Session(state=SessionState(name="h200"), mode=RECORDED)
    baseline = Baseline(session)
    for e in sorted([*real_events(), MARKED], key=lambda e: e.t):
        if e.t <= t:
            session.emit(e)
    return baseline.result()


def _player(path: Path, at: float):
    replayer = Replayer(path, clock=lambda: 0.0)
    replayer.timeline.scan()
    replayer.player.seek_time(at)
    return PerftriageApp(Cockpit(registry=HostRegistry(), session=replayer.session)), replayer


def _gap_text(app) -> str:
    return str(app.screen.query_one("#gap-live").render())


async def test_the_replay_shows_the_verdicts_the_cockpit_showed(tmp_path: Path):
    path = _recording(tmp_path / "h200-baseline.jsonl")
    app, replayer = _player(path, AFTER_T)
    now = replayer.session.state.last_t
    assert replayer.session.state.baseline == MARKED and 60 < now <= AFTER_T
    # what the live cockpit computed, and what `perftriage compare` says of the same slices
    live = _live_result(AFTER_T)
    rec = load(path)
    by_compare = compare(Side(rec, Window(MARKED.label, MARKED.start, MARKED.end)),
                         Side(rec, Window("last 30 s", now - 30.0, now)))
    assert live is not None and live["metrics"] == by_compare["metrics"]
    assert live["summary"] == by_compare["summary"] == (
        "B is 8.0× faster than A in decode throughput · localhost (13.6 → 109 tok/s, "
        "p < 0.001); GPU idle 43.5 → 9.6 %")
    phrases = [text for text, _ in metric_phrases(live, GAP_METRICS, HOST)]
    assert "decode throughput 13.6 → 109 tok/s ▲ improved" in phrases
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("G")
        await wait_for(lambda: type(app.screen).__name__ == "RooflineScreen")
        await wait_for(lambda: "▲ improved" in _gap_text(app))
        text = _gap_text(app)
        assert "last 30 s vs baseline 0:05–0:33" in text
        assert "runs in the cockpit" not in text
        shown = " · ".join(line.strip() for line in text.splitlines())
        for phrase in phrases:
            assert phrase in shown, phrase
    # the replay's comparison is `compare`'s, whole; nothing live runs beside it
    assert app.cockpit.baseline is not None and app.cockpit.baseline.result() == by_compare
    assert app.cockpit.triage is None
    replayer.close()


def test_a_watched_recording_is_not_compared(tmp_path: Path):
    """``perftriage watch`` follows a transcript still written: what it read
    once would go stale, so it shows the mark only (and the cockpit compares)."""
    watcher = Watcher(_recording(tmp_path / "h200-baseline.jsonl"))
    watcher.go_live()
    cockpit = Cockpit(registry=HostRegistry(), session=watcher.session)
    assert watcher.session.state.baseline == MARKED
    assert cockpit.baseline is None and cockpit.triage is None
    watcher.close()


async def test_before_the_mark_nothing_and_seeking_moves_the_verdicts(tmp_path: Path):
    path = _recording(tmp_path / "h200-baseline.jsonl")
    app, replayer = _player(path, 20.0)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("G")
        await wait_for(lambda: type(app.screen).__name__ == "RooflineScreen")
        await pilot.pause(0.2)
        assert "baseline" not in _gap_text(app)  # not marked yet at 0:20
        await pilot.press("escape")
        await wait_for(lambda: type(app.screen).__name__ == "ReplayScreen")
        await pilot.press("t", *"1:10", "enter")
        await wait_for(lambda: replayer.session.state.baseline is not None)
        await pilot.press("G")
        await wait_for(lambda: type(app.screen).__name__ == "RooflineScreen")
        await wait_for(lambda: "decode throughput 13.6 → 109 tok/s ▲ improved" in _gap_text(app))
        # right after the mark the last 30 s are the slow phase itself: no change
        await pilot.press("escape")
        await wait_for(lambda: type(app.screen).__name__ == "ReplayScreen")
        await pilot.press("t", *"0:35", "enter")
        await pilot.press("G")
        await wait_for(lambda: type(app.screen).__name__ == "RooflineScreen")
        expected = [t for t, _ in metric_phrases(_live_result(35.0), GAP_METRICS, HOST)]
        await wait_for(lambda: expected[0] in _gap_text(app))
        shown = " · ".join(line.strip() for line in _gap_text(app).splitlines())
        assert all(p in shown for p in expected) and "▲ improved" not in shown
    replayer.close()


def test_a_replay_reads_its_transcript_once_and_a_file_gone_compares_nothing(tmp_path: Path):
    path = _recording(tmp_path / "h200-baseline.jsonl")
    replayer = Replayer(path, clock=lambda: 0.0)
    replayer.timeline.scan()
    replayer.player.seek_time(AFTER_T)
    baseline = Baseline(replayer.session, transcript=path)
    assert baseline.result() is not None
    read = baseline.live
    replayer.player.seek_time(AFTER_T + 5.0)
    assert baseline.result() is not None and baseline.live is read  # not read again
    path.unlink()
    gone = Baseline(replayer.session, transcript=path)
    assert gone.result() is None  # said as "no readings to compare yet", never a crash
    replayer.close()


def test_a_large_transcript_is_read_in_a_thread_and_compared_once_in(tmp_path: Path,
                                                                     monkeypatch):
    """Read on the UI's thread, a 1M-event transcript froze the replay for
    seconds at the first frame past the mark: above a size it is read in a
    thread, and until it is in there is nothing to compare (not a wrong one)."""
    import perftriage.services.compare.baseline as baseline_mod

    monkeypatch.setattr(baseline_mod, "SYNC_READ_MAX_BYTES", 0)
    path = _recording(tmp_path / "h200-baseline.jsonl")
    replayer = Replayer(path, clock=lambda: 0.0)
    replayer.timeline.scan()
    replayer.player.seek_time(AFTER_T)
    baseline = Baseline(replayer.session, transcript=path)
    gate = baseline_mod.load

    started = []

    def slow_load(p, *a, **kw):
        started.append(p)
        import time
        time.sleep(0.3)
        return gate(p, *a, **kw)

    monkeypatch.setattr(baseline_mod, "load", slow_load)
    assert baseline.result() is None and baseline.reading  # asked: the read starts, no answer
    assert baseline.before is None  # nothing kept from the empty stand-in
    assert baseline._reader is not None
    baseline._reader.join(10)
    assert not baseline.reading and started == [path]
    replayer.player.seek_time(AFTER_T + 1.0)  # the next second: compared
    assert baseline.result() is not None
    replayer.close()
