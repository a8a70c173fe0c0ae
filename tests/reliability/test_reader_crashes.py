"""Transcripts that are not what the writer makes (hand-edited, foreign,
corrupt) never give a traceback in report, replay or sessions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.model import host_info
from tests.support.helpers import replay_app

HEADER = {"format": "perftriage-session", "version": 1, "started_at": "2026-12-01T01:00:54+00:00",
          "perftriage": "0.1.0", "name": "x"}
UP = {"type": "host.status", "host": "a", "state": "up", "t": 1.0}

CASES = {
    "hosts-null": ({**HEADER, "hosts": None}, [UP]),
    "hosts-int": ({**HEADER, "hosts": [1]}, [UP]),
    "hosts-not-a-list": ({**HEADER, "hosts": {"a": 1}, "name": ["n"], "started_at": 5}, [UP]),
    "host-named-markup": ({**HEADER, "hosts": ["[/]"]}, [
        {"type": "host.status", "host": "[/]", "state": "down", "reason": "[/b]x[", "t": 1.0},
        {"type": "host.sample", "host": "[/]", "gpus": [{"index": 0, "name": "[/]"}], "t": 2.0}]),
    "deeply-nested": ({**HEADER, "hosts": ["a"]}, [
        UP, '{"type":"note","text":"x","t":2,"extra":' + "[" * 100_000 + "]" * 100_000 + "}",
        {"type": "note", "text": "after", "t": 3.0}]),
    "host-info-wrong-types": ({**HEADER, "hosts": ["a"]}, [
        UP, {"type": "host.info", "host": "a", "t": 1.5, "info": {
            "bandwidth_gbs": "fast", "bandwidth_gbs_total": "x", "bus_width_bits": [1],
            "topo": [1], "topo_error": 3, "driver": 5, "gpu_source": {"a": 1},
            "processes": {"0": [1, {"pid": "x", "name": None}], "1": "no"}}},
        {"type": "host.sample", "host": "a", "gpus": [{"index": 0, "name": "H200"}], "t": 2.0}]),
    "duplicate-hypothesis-id": ({**HEADER, "hosts": ["a"]}, [
        {"type": "hypothesis.added", "hyp_id": "h1", "title": "one", "t": 1.0},
        {"type": "hypothesis.added", "hyp_id": "h1", "title": "two", "t": 2.0},
        {"type": "hypothesis.updated", "hyp_id": "h1", "status": "supported", "t": 3.0},
        {"type": "evidence.linked", "hyp_id": "h1", "ref_id": "p1", "t": 4.0}]),
}


def write_case(directory: Path, name: str) -> Path:
    header, events = CASES[name]
    path = directory / f"{name}.jsonl"
    lines = [json.dumps(header)] + [e if isinstance(e, str) else json.dumps(e) for e in events]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("name", list(CASES))
def test_headless_readers_never_trace_back(tmp_path, name):
    path = write_case(tmp_path, name)
    runner = CliRunner()
    for argv in (["report", str(path), "-o", "-"], ["replay", "--json", str(path)]):
        r = runner.invoke(cli, argv)
        assert r.exception is None or isinstance(r.exception, SystemExit), (argv, r.exc_info)
        assert r.exit_code == 0, (argv, r.output)
    sessions = tmp_path / "s"
    sessions.mkdir()
    shutil.copy(path, sessions)
    for extra in ([], ["--json"]):
        r = runner.invoke(cli, ["--sessions-dir", str(sessions), "sessions", *extra])
        assert r.exit_code == 0 and r.exception is None, r.exc_info
        assert path.name in r.output


@pytest.mark.parametrize("name", list(CASES))
async def test_the_cockpit_replays_every_case(tmp_path, name):
    from perftriage.ui.screens.host_detail import HostDetailScreen
    from perftriage.ui.screens.roofline import RooflineScreen

    app = replay_app(write_case(tmp_path, name))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        state = app.cockpit.session.state
        for host in list(state.hosts):
            app.push_screen(HostDetailScreen(host))
            await pilot.pause()
            app.pop_screen()
        app.push_screen(RooflineScreen(state))
        await pilot.pause()
        app.pop_screen()
        await pilot.pause()
        assert app.is_running


def test_nested_line_is_a_problem_and_the_rest_is_kept(tmp_path):
    from perftriage.core.model import events as ev
    from perftriage.core.store import transcript

    tr = transcript.read(write_case(tmp_path, "deeply-nested"))
    assert [p.line for p in tr.problems] == [3]
    assert [e.text for e in tr.events if isinstance(e, ev.NoteAdded)] == ["after"]


def test_header_shapes_are_normalised(tmp_path):
    from perftriage.core.store import transcript

    assert transcript.read(write_case(tmp_path, "hosts-null")).hosts == []
    assert transcript.read(write_case(tmp_path, "hosts-int")).hosts == []
    tr = transcript.read(write_case(tmp_path, "hosts-not-a-list"))
    assert (tr.hosts, tr.header["name"], tr.header["started_at"]) == ([], '["n"]', "5")


def test_duplicate_hypothesis_id_keeps_the_first():
    from perftriage.core.model import events as ev
    from perftriage.core.model.reducer import replay
    from perftriage.core.model.state import SessionState

    state = replay([ev.HypothesisAdded(hyp_id="h1", title="one"),
                    ev.HypothesisAdded(hyp_id="h1", title="two"),
                    ev.HypothesisUpdated(hyp_id="h1", status="supported")], SessionState())
    assert [(h.title, h.status) for h in state.hypotheses] == [("one", "supported")]


def test_host_info_wrong_types_are_dropped():
    info = host_info.clean(CASES["host-info-wrong-types"][1][1]["info"])
    assert info == {"processes": {"0": [{"pid": 0, "name": "", "used_mib": None}]}}
    good = {"bandwidth_gbs": {"0": 4814.3}, "bandwidth_gbs_total": 4814.3, "driver": "580",
            "topo": {"columns": ["GPU0"], "rows": [["GPU0", "X"]], "legend": []}}
    assert host_info.clean(good) == good
    assert host_info.bandwidth_summary(good) == "4814 GB/s per GPU"
