"""A mistyped probe can be taken out of the session: a ProbeRemoved event,
after which the probe is gone from the state, from the hypotheses' evidence
and from the report — live and on replay alike."""

from __future__ import annotations

import asyncio
import sys

from perftriage.core.model import events as ev
from perftriage.core.model import reducer
from perftriage.core.model.state import SessionState
from perftriage.core.report import markdown as report
from perftriage.core.report.from_file import render_file
from perftriage.core.store import transcript
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.probes.runner import ProbeRunner
from perftriage.services.investigation.session import Session

from tests.support.probe_support import local_host


def _runner(tmp_path) -> ProbeRunner:
    host = local_host(python=sys.executable)
    reg = HostRegistry()
    reg.add(host)
    return ProbeRunner(Session(name="rm", hosts=reg.names, sessions_dir=tmp_path), reg)


async def test_a_removed_probe_leaves_the_state_the_evidence_and_the_report(tmp_path):
    runner = _runner(tmp_path)
    session = runner.session
    typo = runner.enqueue("localhost", "import", ["xflashinfer.cut"])
    good = runner.enqueue("localhost", "import", ["json"])
    await runner.wait()
    session.emit(ev.HypothesisAdded(hyp_id="h1", title="cutedsl kernels are missing"))
    for pid in (typo, good):
        session.emit(ev.EvidenceLinked(hyp_id="h1", ref_kind="probe", ref_id=pid,
                                       stance="for"))
    assert runner.remove(typo) is True
    assert runner.remove("p-no-such") is False
    assert list(session.state.probes) == [good]
    assert [e.ref_id for e in session.state.hypotheses[0].evidence] == [good]
    live = report.render(session.state)
    assert "xflashinfer" not in live and "import json" in live
    session.close()
    # replay: the transcript holds the probe and its removal, the state does not
    tr = transcript.read(session.path)
    assert any(isinstance(e, ev.ProbeRemoved) and e.probe_id == typo for e in tr.events)
    state = reducer.replay(tr.events, SessionState())
    assert list(state.probes) == [good]
    for text in (report.render_transcript(tr), render_file(session.path)):
        assert "xflashinfer" not in text and "import json" in text


async def test_removing_a_running_probe_cancels_it_and_records_no_verdict(tmp_path):
    runner = _runner(tmp_path)
    seen: list[ev.Event] = []
    runner.session.subscribe(seen.append)
    pid = runner.enqueue("localhost", "shell", ["sleep 30"])
    for _ in range(200):
        if runner.session.state.probes[pid].status == "running":
            break
        await asyncio.sleep(0.01)
    assert runner.remove(pid) is True
    await runner.wait()
    assert pid not in runner.session.state.probes
    kinds = [type(e).__name__ for e in seen if getattr(e, "probe_id", None) == pid]
    assert kinds == ["ProbeQueued", "ProbeStarted", "ProbeRemoved"]
    runner.session.close()
