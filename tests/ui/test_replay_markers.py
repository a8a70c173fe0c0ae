"""The replay's markers are the story's beats (every hypothesis added, each
change of the triage's top cause per host), and its footer offers no key
that is off in a replay."""

from __future__ import annotations

from pathlib import Path

from perftriage.core.replay.timeline import Timeline
from perftriage.ui.widgets.footer import footer_groups

from tests.support.helpers import EXAMPLE_SESSION, replay_app
from tests.support.relive import relive

RUN2 = Path(__file__).parents[1] / "fixtures" / "gpm" / "h200-run2" / "transcript.jsonl"


def _markers(path, kind):
    tl = Timeline.open(path)
    tl.scan()
    return [m for m in tl.markers if m.kind == kind]


def test_every_hypothesis_added_is_a_marker():
    added = [m for m in _markers(EXAMPLE_SESSION, "hypothesis") if " + " in m.label]
    assert len(added) == 11
    assert added[0].label.startswith("h1 + MoE experts run on flashinfer_cutlass")


def test_changes_of_the_triages_top_cause_are_markers(tmp_path):
    # the H200 run as the cockpit records it now (its live triage), and as it was recorded
    got = [(m.label, m.t) for m in _markers(relive(RUN2, tmp_path / "r.jsonl"), "triage")]
    per_host: dict[str, list[tuple[str, float]]] = {}
    for label, t in got:
        host, cause = label.split(": ")
        per_host.setdefault(host, []).append((cause, t))
    # localhost and viadmon read the same GPUs (their UUIDs): one machine, whose
    # findings the live triage says once, under the SSH host's name
    assert list(per_host) == ["viadmon"]
    # a decode rate first (need a witness), the slow phase's traffic, the fix: near the floor
    assert [c for c, _ in per_host["viadmon"]] == ["need-evidence", "wasted-traffic",
                                                   "near-floor"]
    assert 30 <= per_host["viadmon"][-1][1] <= 45
    assert all(rows[-1][0] == "near-floor" for rows in per_host.values())
    # one marker per change: never the same cause twice in a row on a host
    assert all(a[0] != b[0] for rows in per_host.values() for a, b in zip(rows, rows[1:]))
    assert _markers(RUN2, "triage") == []  # the gap's old verdicts make no marker


def test_a_recording_without_the_live_triage_gets_the_recordings_markers():
    """The same run as it was recorded (no ``triage.updated``) in the player:
    the recording's triage (what ``perftriage triage`` says, one machine as
    viadmon) marks each change of the top cause, and the state at each
    marker holds that cause."""
    from perftriage.core.model.findings import top
    from perftriage.services.investigation.replay import Replayer

    replayer = Replayer(RUN2, clock=lambda: 0.0)
    replayer.timeline.scan()
    assert replayer.settle()
    marks = [m.label for m in replayer.timeline.markers if m.kind == "triage"]
    assert marks == ["viadmon: wasted-traffic", "viadmon: near-floor"]
    replayer.player.seek(0)
    for label in marks:
        m = replayer.player.next_marker(frozenset({"triage"}))
        assert m is not None and m.label == label
        replayer.settle()
        told = replayer.session.state.triage
        assert set(told) == {"viadmon"} and top(told["viadmon"].findings).cause == label[9:]
    fixed = next(m for m in replayer.timeline.markers if m.label == "viadmon: near-floor")
    assert 30.0 <= fixed.t <= 31.0  # the first event of the phase after the fix (0:30)
    replayer.close()


async def test_the_replay_footer_offers_no_key_that_is_off():
    app = replay_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0.5)
        for key in ("1", "2"):
            await pilot.press(key)
            await pilot.pause(0.2)
            _, local, everywhere = footer_groups(app.screen)
            ids = {b.id for b, _, _ in local + everywhere}
            assert not {i for i in ids if i and i.startswith(("probe.", "server."))} - {
                "probe.output"}
            assert "logs.open" not in ids and "app.quit" in ids
        await pilot.press("q")



async def test_watch_offers_only_what_works_read_only():
    """watch: no N, H, G or M in the footer or the keys help (pressed, N
    answered that it is read-only), and no 'o opens a log file'."""
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts.registry import HostRegistry
    from perftriage.services.investigation.watch import Watcher
    from perftriage.ui.app import PerftriageApp
    from perftriage.ui.screens.keys_help import key_sections

    watcher = Watcher(EXAMPLE_SESSION)
    watcher.go_live()
    app = PerftriageApp(Cockpit(registry=HostRegistry(), session=watcher.session))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0.5)
        for key in ("1", "3", "4"):
            await pilot.press(key)
            await pilot.pause(0.2)
            _, local, everywhere = footer_groups(app.screen)
            ids = {b.id for b, _, _ in local + everywhere}
            assert not ids & {"session.note", "hypothesis.add", "roofline.open", "report.write",
                              "logs.open", "hypothesis.edit", "hypothesis.status_next"}
            everywhere = dict(key_sections(app.screen))["everywhere"]
            assert not {k for k, _ in everywhere} & {"N", "H", "G", "M", "o"}
        assert "o opens" not in str(app.screen.query_one("#logs-metrics").render())
        await pilot.press("q")
    watcher.close()
