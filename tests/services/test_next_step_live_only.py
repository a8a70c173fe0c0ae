"""Enter runs only what this cockpit's own triage derived (issue 47 item 1).

A finding read from a transcript — a continued investigation (``-s NAME``),
a replay, a shared file — is history: shown, never run. A step that runs is
looked up in the live triage by host and cause and its arguments rebuilt
from typed values: the kernel names the triage read from this cockpit's
capture (``re.escape``), the port of the configured engine URL or the pid
of a server this cockpit started; never a word or flag of the record.
The transcripts here are crafted as an attacker would, and continued and
replayed through the real code paths (``open_investigation``, the real
:class:`Cockpit`, its real probe runner)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from perftriage.core.model import events as ev
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.store.config import Config, HostConfig, ServerProfile
from perftriage.services.cockpit import Cockpit
from perftriage.services.investigation.named import open_investigation
from perftriage.services.investigation.session import RECORDED, REPLAY, WATCH, Session
from perftriage.services.logs.server_launcher import ServerRun
from perftriage.services.triage import next_step
from tests.core.test_triage_real import EAGER, GRAPH

LONG = "fused_moe_kernel|" + "A" * 4000
# what an attacker records as a finding's next steps
CRAFTED = [
    {"cause": "kernel-below-roofline", "severity": "high", "title": "kernels below roofline",
     "explains_pct": 40.0, "evidence": [], "against": [], "confirmed": False,
     "next": {"kind": "ncu", "why": "x",
              "args": ["--kernel", LONG, "--", "/bin/sh", "-c", "touch {marker}"]}},
    {"cause": "host-stall", "severity": "high", "title": "a stall", "explains_pct": 30.0,
     "evidence": [], "against": [], "confirmed": True,
     "next": {"kind": "stacks", "args": ["--pid", "1", "--native"], "why": "x"}},
    {"cause": "launch-bound", "severity": "high", "title": "launches", "explains_pct": 20.0,
     "evidence": [], "against": [], "confirmed": True,
     "next": {"kind": "capture", "args": ["http://evil:1/", "99999"], "why": "x"}},
    {"cause": "queueing", "severity": "moderate", "title": "queue", "explains_pct": 5.0,
     "evidence": [], "against": [], "confirmed": True,
     "next": {"kind": "metrics", "args": ["http://evil:2/metrics"], "why": "x"}},
]
CONFIG = Config(
    hosts=[HostConfig(name="gpu2", ssh="gpu2", metrics_url="http://127.0.0.1:31000/metrics")],
    servers=[ServerProfile(name="sglang", host="gpu2",
                           command="python -m sglang.launch_server --model {model}",
                           profile_command="python -m sglang.bench_one_batch --model-path {model}",
                           args={"model": "/m/Qwen 3"})])


def crafted_investigation(sessions: Path, marker: Path) -> None:
    """An investigation whose transcript holds the crafted findings for gpu2."""
    session = open_investigation("shared", sessions, ["gpu2"])
    findings = [dict(f) for f in CRAFTED]
    findings[0]["next"] = {**CRAFTED[0]["next"],
                           "args": [a.replace("{marker}", str(marker))
                                    for a in CRAFTED[0]["next"]["args"]]}
    session.emit(ev.TriageUpdated(host="gpu2", start=0.0, end=10.0, findings=findings))
    session.close()


def continued(tmp_path: Path) -> tuple[Cockpit, Path]:
    marker = tmp_path / "pwned"
    crafted_investigation(tmp_path / "sessions", marker)
    session = open_investigation("shared", tmp_path / "sessions", ["gpu2"])
    return Cockpit(CONFIG, session=session), marker


def payload_free(text: str) -> bool:
    return not any(w in text for w in ("/bin/sh", "touch", "--pid", "--native", "evil", "AAAA"))


def test_a_continued_investigation_shows_its_recorded_steps_and_runs_none(tmp_path):
    cockpit, marker = continued(tmp_path)
    assert cockpit.session.mode.live and cockpit.triage is not None
    shown = cockpit.session.state.triage["gpu2"].findings
    assert [f.cause for f in shown] == [f["cause"] for f in CRAFTED]
    before = dict(cockpit.session.state.probes)
    for f in shown:
        p = next_step.plan(cockpit, "gpu2", f)
        assert p is not None and p.problem == next_step.HISTORY, (f.cause, p)
        assert p.args == [] and payload_free(p.text) and len(p.text) < 80
        out = next_step.run(cockpit, p)
        assert not out.started and out.text == next_step.HISTORY
    assert cockpit.session.state.probes == before and not marker.exists()
    assert list(cockpit.sources) == []  # no engine read from the recorded URL
    cockpit.session.close()


def test_the_same_cause_derived_live_runs_the_rebuilt_step_never_the_record(tmp_path):
    cockpit, marker = continued(tmp_path)
    queued: list[tuple[str, str, list[str]]] = []
    cockpit.probes.enqueue = lambda h, k, a, **_: queued.append((h, k, list(a))) or "p1"  # type: ignore[method-assign,func-returns-value]
    # this cockpit's own capture on gpu2: a CUDA-graph decode, the GPU busy
    summary = summarize_files(GRAPH)
    cockpit.session.emit(ev.ProfileCaptured(capture_id="prof1", host="gpu2", summary=summary))
    assert cockpit.triage is not None
    live = cockpit.triage.evaluate(cockpit.session.state.last_t)
    [lead] = [f for f in live["gpu2"].findings if f.cause == "kernel-below-roofline"]
    assert lead.next is not None and lead.next.kind == "ncu" and lead.next.kernels
    # Enter on the finding as shown (the live triage's event replaced the record)
    shown = next(f for f in cockpit.session.state.triage["gpu2"].findings
                 if f.cause == "kernel-below-roofline")
    # ... and on the crafted record of the same host and cause: the same rebuilt step
    for f in (shown, CRAFTED[0]):
        p = next_step.plan(cockpit, "gpu2", f)
        assert p is not None and p.problem is None, p
        # the kernels' base names (what ncu's -k matches), each through re.escape
        keys = ["indexSelectSmallIndex", "nvjet_sm90_tst_256x8_64x6_2x1_v_bz_NNT",
                "nvjet_sm90_tst_128x8_64x12_2x1_v_bz_NNT"]
        assert p.args == ["--kernel", "|".join(re.escape(n) for n in keys),
                          "--launches", str(4 * len(keys)), "--",
                          "python", "-m", "sglang.bench_one_batch", "--model-path", "/m/Qwen 3"]
        assert payload_free(" ".join(p.args)) and payload_free(p.text)
    # every kernel name in the regex is one the capture named
    top = {k.name for k in summary.kernels}
    assert all(any(t.startswith(n) for t in top) for n in lead.next.kernels)  # (cut to 300)
    # the other crafted causes are not in the live triage: still history
    for f in CRAFTED[1:]:
        p = next_step.plan(cockpit, "gpu2", f)
        assert p is None or p.problem == next_step.HISTORY
    p = next_step.plan(cockpit, "gpu2", CRAFTED[0])
    assert p is not None and next_step.run(cockpit, p).started
    assert len(queued) == 1 and queued[0][:2] == ("gpu2", "ncu") and not marker.exists()
    cockpit.session.close()


@pytest.mark.parametrize("mode", [RECORDED, REPLAY, WATCH])
def test_a_replayed_or_watched_transcript_runs_nothing(tmp_path, mode):
    marker = tmp_path / "pwned"
    crafted_investigation(tmp_path / "sessions", marker)
    [path] = (tmp_path / "sessions").glob("shared*.jsonl")
    session, _ = Session.from_transcript(path)
    session.mode = mode
    cockpit = Cockpit(CONFIG, session=session)
    assert cockpit.triage is None  # no live triage: nothing is this cockpit's own
    for f in session.state.triage["gpu2"].findings:
        p = next_step.plan(cockpit, "gpu2", f)
        assert p is not None and p.problem and p.args == [] and payload_free(p.text)
        assert not next_step.run(cockpit, p).started
    assert not marker.exists()


# --- stacks on the server's own processes --------------------------------------------


def stacks_cockpit(config: Config) -> Cockpit:
    cockpit = Cockpit(config)
    # this cockpit's own capture on gpu2: an eager decode, the host late: stacks next
    cockpit.session.emit(ev.ProfileCaptured(capture_id="prof1", host="gpu2",
                                            summary=summarize_files(EAGER)))
    assert cockpit.triage is not None
    cockpit.triage.evaluate(cockpit.session.state.last_t)
    return cockpit


def stacks_plan(cockpit: Cockpit) -> next_step.StepPlan:
    f = next(f for f in cockpit.session.state.triage["gpu2"].findings
             if f.next is not None and f.next.kind == "stacks")
    p = next_step.plan(cockpit, "gpu2", f)
    assert p is not None
    return p


def test_stacks_sample_the_process_on_the_engine_urls_port():
    p = stacks_plan(stacks_cockpit(CONFIG))
    assert p.problem is None and p.args == ["--seconds", "3", "--port", "31000"]


def test_stacks_sample_a_server_this_cockpit_started():
    cockpit = stacks_cockpit(CONFIG)
    run = ServerRun(CONFIG.servers[0], "python -m sglang.launch_server", state="ready",
                    guard_pid=4242)
    cockpit.servers.runs["sglang"] = run
    assert stacks_plan(cockpit).args == ["--seconds", "3", "--server-pid", "4242"]
    run.state = "exited"  # gone: the engine URL's port again
    assert stacks_plan(cockpit).args == ["--seconds", "3", "--port", "31000"]


def test_stacks_without_the_servers_process_sample_nothing():
    cockpit = stacks_cockpit(Config(hosts=[HostConfig(name="gpu2", ssh="gpu2")]))
    p = stacks_plan(cockpit)
    assert p.problem is not None and "server's process on gpu2 cannot be found" in p.problem
    before = dict(cockpit.session.state.probes)
    assert not next_step.run(cockpit, p).started and cockpit.session.state.probes == before
