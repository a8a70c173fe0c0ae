"""`perftriage triage` end to end: on a recording (the slice syntax of
compare, the documented JSON shape, exit 2 naming a bad slice) and live
(a SIMULATED SGLang server on 127.0.0.1: its /metrics, its log, a real
py-spy stacks record, a capture only when allowed)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from tests.support.compare_recordings import two_runs


def run(*args: str, sessions: Path | None = None):
    base = ["--sessions-dir", str(sessions)] if sessions else []
    return CliRunner().invoke(cli, [*base, "triage", *args])


def test_json_shape_and_phases(tmp_path):
    path = two_runs(tmp_path / "moe.jsonl")
    r = run(str(path), "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert list(out) == ["label", "from", "to", "hosts", "phases"]
    assert out["from"] == 0 and out["to"] == pytest.approx(80.6, abs=0.1)
    # localhost and viadmon read one GPU (the same UUID): one host, as the cockpit names it
    assert out["hosts"] == ["viadmon"]
    phase = next(p for p in out["phases"] if p["host"] == "viadmon")
    assert list(phase)[:3] == ["from", "to", "host"]
    finding = phase["findings"][0]
    assert list(finding)[:8] == ["cause", "severity", "title", "explains_pct", "evidence",
                                 "against", "next", "fix"]
    # the eager capture (taken as localhost, the same GPU) over the dmon counters' waste
    assert finding["cause"] == "launch-bound" and finding["severity"] == "high"
    assert phase["findings"][1]["cause"] == "wasted-traffic"
    assert list(finding["evidence"][0]) == ["witness", "text", "at", "source"]
    shares = [f["explains_pct"] for f in phase["findings"] if f["explains_pct"] is not None]
    assert shares == sorted(shares, reverse=True)


def test_a_slice_triages_only_its_time(tmp_path):
    path = two_runs(tmp_path / "moe.jsonl")
    r = run(f"{path}@40-80", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert (out["from"], out["to"]) == (40.0, 80.0)
    causes = {f["cause"] for p in out["phases"] for f in p["findings"]}
    assert "wasted-traffic" not in causes and "near-floor" in causes


def test_text_names_the_evidence_and_the_fix(tmp_path):
    r = run(str(two_runs(tmp_path / "moe.jsonl")))
    assert r.exit_code == 0, r.output
    assert "wasted-traffic" in r.output and "← gap" in r.output and "fix:" in r.output
    assert "after the change: wasted-traffic: resolved — the gap at " in r.output
    assert "no longer finds it; outcome: gap 8.9 → 1.1x ▲" in r.output


def test_one_machine_under_two_names_is_said_once_and_triaged_as_one(tmp_path):
    """localhost and viadmon read one GPU (the same UUID): the text triages
    viadmon only and says so in a note; a hostile name there is shown escaped."""
    path = two_runs(tmp_path / "moe.jsonl")
    r = run(str(path))
    assert r.exit_code == 0, r.output
    assert " on localhost" not in r.output and "phase 0:00–0:34 on viadmon" in r.output
    assert r.output.rstrip().endswith(
        "note: localhost and viadmon are the same machine (the same 1 GPU UUID): the triage "
        "reads their evidence as viadmon's")
    odd = tmp_path / "odd.jsonl"
    lines = path.read_text().splitlines()
    odd.write_text("\n".join(lines[:1] + [
        ln.replace('"host":"localhost"', '"host":"evil\\u001b]0;x\\u0007"') for ln in lines[1:]]) + "\n")
    r = run(str(odd))
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.output and "\x07" not in r.output
    # (neither is localhost: the first by name speaks for the machine)
    assert "note: viadmon and evil␛]0;x␇ are the same machine" in r.output


@pytest.mark.parametrize("bad, said", [
    ("@9:00-", "outside the session"),
    ("#7", "no run 7"),
])
def test_a_bad_slice_exits_2_naming_it(tmp_path, bad, said):
    path = two_runs(tmp_path / "moe.jsonl")
    r = run(f"{path}{bad}")
    assert r.exit_code == 2
    assert said in r.output and bad in r.output


def test_no_such_session_and_no_arguments(tmp_path):
    r = run("nope", sessions=tmp_path)
    assert r.exit_code == 2 and "no session 'nope'" in r.output
    r = run(sessions=tmp_path)
    assert r.exit_code == 2 and "--host H --url URL" in r.output
    r = run("nope", "--host", "localhost", "--url", "http://127.0.0.1:1", sessions=tmp_path)
    assert r.exit_code == 2 and "not both" in r.output


@pytest.fixture
def simulated_server(tmp_path):
    """The SIMULATED SGLang server (log + /metrics + profiling contract) on 127.0.0.1."""
    from perftriage.cli.commands.demo import free_loopback_port

    port = free_loopback_port()
    log = tmp_path / "sim.log"
    proc = subprocess.Popen([sys.executable, "-m", "perftriage.simulator.sglang_sim", "--log",
                             str(log), "--rate", "8", "--startup-s", "0.05", "--metrics-port",
                             str(port), "--tp", "1"])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and "ready to roll" not in (
            log.read_text() if log.exists() else ""):
        time.sleep(0.1)
    yield port, log
    proc.terminate()
    proc.wait(10)


@pytest.mark.parametrize("allow_capture", [False, True])
def test_live_triage_of_a_simulated_server(tmp_path, simulated_server, allow_capture):
    port, log = simulated_server
    args = ["--host", "localhost", "--url", f"http://127.0.0.1:{port}", "--log", str(log),
            "--seconds", "4", "--json"]
    r = run(*args, *(["--allow-capture"] if allow_capture else []), sessions=tmp_path / "s")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["hosts"] == ["localhost"]
    witnesses = {e["witness"] for p in out["phases"] for f in p["findings"]
                 for e in f["evidence"]}
    sources = {e["source"] for p in out["phases"] for f in p["findings"]
               for e in f["evidence"] + f["against"]}
    if allow_capture:
        assert "capture" in witnesses and "prof1" in sources
    else:
        assert "capture" not in witnesses
        # without a capture the triage asks for one, never guesses
        leads = [f for p in out["phases"] for f in p["findings"] if not f["confirmed"]]
        assert any(f["next"] and f["next"]["kind"] == "capture" for f in leads)
    recorded = list((tmp_path / "s").glob("*triage-localhost*.jsonl"))
    assert len(recorded) == 1  # an ordinary investigation: report and triage read it again
    # the stacks record read the server behind the URL: the tree listening on its port
    from perftriage.core.model import events as ev
    from perftriage.core.store.stream import iter_events

    events = [e for _, e in iter_events(recorded[0])]
    (queued,) = [e for e in events if isinstance(e, ev.ProbeQueued) and e.kind == "stacks"]
    assert queued.args == ["--seconds", "3", "--port", str(port)]
    (done,) = [e for e in events if isinstance(e, ev.ProbeFinished)
               and e.probe_id == queued.probe_id]
    assert done.status == "ok" and done.detail["server"]["port"] == port, done.summary
    again = run(str(recorded[0]), "--json")
    assert again.exit_code == 0, again.output


def test_a_recorded_demo_is_reached_by_the_name_on_screen(tmp_path):
    """issue 41 item 6: the cockpit's title says `demo`; `compare demo@…`,
    `triage demo` and `report demo` find the newest unnamed session so named."""
    sessions = tmp_path / "s"
    sessions.mkdir()
    older = two_runs(sessions / "20261203-101010-demo.jsonl")
    newer = two_runs(sessions / "20261204-090000-demo.jsonl")
    (sessions / "20261204-100000-demo-2.jsonl").write_text("not this one\n")
    from perftriage.core.store.session_files import resolve_session

    assert resolve_session("demo", sessions) == newer != older
    r = run("demo@40-80", "--json", sessions=sessions)
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["--sessions-dir", str(sessions), "compare", "demo@0-30",
                                 "demo@40-80", "--json"])
    assert r.exit_code == 0, r.output
