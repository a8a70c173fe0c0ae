"""A finding of odd types in a transcript (issue 47, item 6): ``next`` as a
string, ``fix: 5``, a share that is text, an evidence item that is a string,
an earlier line that is a number. Each such ``triage.updated`` is decoded at
the transcript's edge into the typed findings (core/model/findings.py),
fails there, and is skipped and counted ("N events unreadable"), never fatal:
in ``check``, ``report``, ``replay --json``, ``triage NAME``, the cockpit
continuing it (``-s NAME``), the player and ``watch``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.model import events as ev
from perftriage.core.store import investigations as inv

HEADER = {"format": "perftriage-session", "version": 1, "started_at": "2026-12-01T01:00:54+00:00",
          "perftriage": "0.1.0", "name": "odd", "hosts": ["gpu1"], "investigation": True}
GOOD = {"cause": "host-stall", "severity": "high", "title": "the host's Python is busy",
        "explains_pct": 42.0, "evidence": [{"witness": "stacks", "text": "busy", "at": 3.0,
                                            "source": "p1"}],
        "against": [], "next": None, "fix": ["move it off the loop"], "host": "gpu1",
        "confirmed": True, "resolved": None}
# each breaks one field of a finding (or of an earlier line) the way the attack did
ODD = {
    "next-a-string": {**GOOD, "next": "ncu -- /bin/sh -c id"},
    "fix-a-number": {**GOOD, "fix": 5},
    "share-as-text": {**GOOD, "explains_pct": "lots"},
    "evidence-a-string": {**GOOD, "evidence": ["a string"]},
    "next-kind-unknown": {**GOOD, "next": {"kind": "shell", "args": ["id"], "why": "x"}},
    "share-1e400": {**GOOD, "explains_pct": 1e400},
    "severity-a-list": {**GOOD, "severity": ["high"]},
}
ODD_EARLIER = [{"cause": 1, "state": "resolved", "text": "x"}]


def _triage(t: float, finding: dict, earlier: list | None = None) -> dict:
    return {"type": "triage.updated", "t": t, "host": "gpu1", "start": 0.0, "end": t,
            "findings": [finding], "earlier": earlier or []}


def odd_events() -> list[dict]:
    """A hypothesis whose check reads the triage, a good triage, then every odd one."""
    out: list[dict] = [
        {"type": "host.status", "host": "gpu1", "state": "up", "t": 0.5},
        {"type": "hypothesis.added", "hyp_id": "h1", "title": "the host stalls",
         "check": "triage.host_stall_pct >= 15", "t": 1.0},
        _triage(2.0, GOOD)]
    t = 3.0
    for finding in ODD.values():
        out.append(_triage(t, finding))
        t += 1.0
    out.append(_triage(t, GOOD, ODD_EARLIER))
    out.append({"type": "note", "text": "after the odd ones", "t": t + 1.0})
    return out


UNREADABLE = len(ODD) + 1


def write(path: Path, header: dict = HEADER, events: list[dict] | None = None) -> Path:
    lines = [json.dumps(header)] + [json.dumps(e) for e in (events or odd_events())]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("name", list(ODD))
def test_each_odd_finding_fails_at_the_edge(name):
    with pytest.raises((ev.msgspec.ValidationError, ev.msgspec.DecodeError)):
        ev.decode(json.dumps(_triage(1.0, ODD[name])))


def test_a_good_finding_decodes_typed_and_its_share_is_bounded():
    e = ev.decode(json.dumps(_triage(1.0, {**GOOD, "explains_pct": 800.0, "severity": "moderate"})))
    assert isinstance(e, ev.TriageUpdated)
    [f] = e.findings
    # clamped to 100 %, and the severity is derived, never believed
    assert f.explains_pct == 100.0 and f.severity == "high"
    assert f.evidence[0].label == "stacks p1" and f.fix == ["move it off the loop"]


def _invoke(*argv: str):
    r = CliRunner().invoke(cli, list(argv))
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
    return r


def test_the_headless_readers_skip_and_count(tmp_path):
    path = write(tmp_path / "odd.jsonl")
    pack = tmp_path / "pack.toml"
    pack.write_text('[[hypotheses]]\ntitle = "the host stalls"\n'
                    'check = "triage.host_stall_pct >= 15"\n')
    said = f"{UNREADABLE} events unreadable"
    r = _invoke("report", str(path), "-o", "-")
    assert r.exit_code == 0 and said in r.stderr and "after the odd ones" in r.stdout, r.output
    r = _invoke("replay", "--json", str(path))
    assert r.exit_code == 0 and said in r.stderr, r.output
    doc = json.loads(r.stdout)
    assert doc["notes"][-1]["text"] == "after the odd ones"
    r = _invoke("triage", str(path))
    assert r.exit_code == 0 and said in r.stderr, r.output
    r = _invoke("check", str(path), "--pack", str(pack), "--json")
    assert r.exit_code == 0 and said in r.stderr, r.output
    [h] = json.loads(r.stdout)["hypotheses"]
    assert h["verdict"] == "supported"  # the good finding (42 %) is read, the odd ones not


def test_the_cockpit_continues_it_and_says_how_many(tmp_path):
    from perftriage.services.investigation.named import open_investigation

    write(inv.path_for("odd", tmp_path))
    s = open_investigation("odd", tmp_path, [])
    try:
        assert s.unreadable == UNREADABLE
        assert s.state.triage["gpu1"].findings[0].cause == "host-stall"
        said = [n.text for n in s.state.notes if "unreadable" in n.text]
        assert len(said) == 1 and said[0].startswith(f"continued past {UNREADABLE} unreadable")
    finally:
        s.close()


async def test_the_player_and_watch_show_the_count(tmp_path):
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts.registry import HostRegistry
    from perftriage.services.investigation.replay import Replayer
    from perftriage.ui.app import PerftriageApp
    from tests.support.helpers import wait_for

    path = write(tmp_path / "odd.jsonl")
    replayer = Replayer(path)
    app = PerftriageApp(Cockpit(registry=HostRegistry(), session=replayer.session))
    async with app.run_test(size=(140, 40)) as pilot:
        replayer.player.seek(replayer.timeline.duration_s if replayer.wait_indexed(10)
                             else 0.0)
        await wait_for(lambda: f"{UNREADABLE} events unreadable" in app.sub_title)
        await pilot.pause()
        assert app.is_running


def test_watch_follows_past_odd_findings_and_counts_them(tmp_path):
    from perftriage.services.investigation.watch import CHECK_INTERVAL_S, Watcher

    now = [0.0]
    path = write(tmp_path / "odd.jsonl", events=odd_events()[:3])  # the good part first
    w = Watcher(path, clock=lambda: now[0])
    w.go_live()
    assert w.session.unreadable == 0 and w.session.state.triage["gpu1"].findings
    with path.open("a") as fh:  # the odd findings arrive while watched
        fh.write("\n".join(json.dumps(e) for e in odd_events()[3:]) + "\n")
    now[0] += CHECK_INTERVAL_S
    w.tick()
    assert w.session.unreadable == UNREADABLE
    assert w.session.state.notes[-1].text == "after the odd ones"


async def test_the_cockpit_app_continuing_it_runs_and_shows_the_count(tmp_path):
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts.registry import HostRegistry
    from perftriage.services.investigation.named import open_investigation
    from perftriage.ui.app import PerftriageApp
    from perftriage.ui.screens.triage import TriageScreen
    from tests.support.helpers import wait_for

    write(inv.path_for("odd", tmp_path))
    session = open_investigation("odd", tmp_path, [])
    app = PerftriageApp(Cockpit(registry=HostRegistry(), session=session))
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(lambda: f"{UNREADABLE} events unreadable" in app.sub_title)
        await pilot.press("Y")  # the Triage view shows the readable (recorded) finding
        await wait_for(lambda: isinstance(app.screen, TriageScreen))
        await pilot.pause()
        assert [f.cause for _, f in app.screen._rows] == ["host-stall"]
        assert app.is_running
