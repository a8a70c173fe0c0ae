"""A stacks probe run by the cockpit's runner: the folded stacks go next to
the transcript (``<transcript>.probes/<id>/``, 0600), the event carries only
the bounded summary."""

from __future__ import annotations

import os
import stat
import sys

from perftriage.core.model import events as ev
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.probes.runner import ProbeRunner
from perftriage.services.investigation.session import Session
from tests.support.probe_support import local_host
from tests.support.stall_target import STALL_FUNCTION, running


async def test_folded_stacks_are_kept_beside_the_transcript(tmp_path):
    reg = HostRegistry()
    reg.add(local_host(python=sys.executable))
    session = Session(hosts=reg.names, sessions_dir=tmp_path)
    finished: list[ev.ProbeFinished] = []
    session.subscribe(lambda e: finished.append(e) if isinstance(e, ev.ProbeFinished) else None)
    runner = ProbeRunner(session, reg)
    with running() as (proc, tag):
        pid = runner.enqueue("localhost", "stacks", ["--match", tag, "--seconds", "1"])
        await runner.wait(pid)
    await runner.close()
    (done,) = finished
    assert done.status == "ok", done.summary
    (path,) = done.detail["files"]
    assert session.path is not None
    assert path == str(session.path.with_name(session.path.name + ".probes") / pid /
                       f"{proc.pid}.folded")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    folded = open(path).read()
    assert STALL_FUNCTION in folded and folded.splitlines()[0].startswith("thread (")
    # the event: the summary, bounded, never the folded text
    assert done.detail["top"]["name"] == STALL_FUNCTION
    assert all(len(p["frames"]) <= 50 for p in done.detail["processes"])
    assert folded.splitlines()[0] not in str(done.detail)
