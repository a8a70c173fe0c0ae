"""The probe queue: per-host FIFO under a cap, cancel, timeout, fan-out,
re-run, templates, and what reaches the transcript."""

from __future__ import annotations

import asyncio
import sys

import pytest

from perftriage.core.model import events as ev
from perftriage.core import probes
from perftriage.core.store import transcript
from perftriage.core.store.config import ProbeTemplate
from perftriage.core.probes import ProbeUsageError
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.probes.runner import ProbeRunner
from perftriage.services.investigation.session import Session

from tests.support.helpers import wait_for
from tests.support.probe_support import TRANSPORTS, alive, local_host, make_host, runner_for
from tests.support.probe_support import close_probe_hosts  # noqa: F401  (autouse)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_concurrency_cap_and_fifo_order(transport, request):
    host = make_host(transport, request)
    runner = runner_for(host, concurrency=2)
    running, peak, started = set(), 0, []

    def watch(e):
        nonlocal peak
        if isinstance(e, ev.ProbeStarted):
            running.add(e.probe_id)
            started.append(e.probe_id)
            peak = max(peak, len(running))
        elif isinstance(e, ev.ProbeFinished):
            running.discard(e.probe_id)

    runner.session.subscribe(watch)
    ids = [runner.enqueue(host.name, "shell", ["sleep 0.2"]) for _ in range(6)]
    await runner.wait()
    assert peak == 2
    assert started == ids  # FIFO
    assert all(runner.session.state.probes[i].status == "ok" for i in ids)


def test_cap_follows_the_host_channel_limit():
    host = local_host(max_channels=3)
    assert runner_for(host, concurrency=8).cap("localhost") == 3
    assert runner_for(host, concurrency=2).cap("localhost") == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_cancel_kills_the_running_process(transport, request, tmp_path):
    host = make_host(transport, request)
    runner = runner_for(host, concurrency=1)
    pidfile = tmp_path / "pid"
    pid = runner.enqueue(host.name, "shell", [f"echo $$ > {pidfile}; exec sleep 60"])
    queued = runner.enqueue(host.name, "shell", ["echo never"])
    await wait_for(lambda: pidfile.exists() and pidfile.read_text().strip())
    remote_pid = int(pidfile.read_text())
    assert alive(remote_pid)
    assert runner.cancel(pid) and runner.cancel(queued)
    await runner.wait()
    await wait_for(lambda: not alive(remote_pid), timeout=10)
    state = runner.session.state.probes
    assert state[pid].status == "cancelled" and state[pid].duration_s is not None
    assert state[queued].status == "cancelled" and state[queued].started_t is None
    assert not runner.cancel(pid)  # already finished


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_timeout(transport, request):
    host = make_host(transport, request)
    runner = runner_for(host)
    pid = runner.enqueue(host.name, "shell", ["sleep 30"], timeout=0.3)
    await runner.wait(pid)
    p = runner.session.state.probes[pid]
    assert p.status == "timeout" and "0.3" in p.summary


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_fan_out_over_two_hosts_with_differing_results(transport, request, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "fakemod_qq.py").write_text("__version__ = '2.0'\n")
    plain = local_host("plain", python=sys.executable)
    other = make_host(transport, request, name="other", python=sys.executable,
                      preamble=f"export PYTHONPATH={site}")
    runner = runner_for(plain, other)
    ids = runner.enqueue_all("import", ["fakemod_qq"])
    same = runner.enqueue_all("import", ["json"])
    await runner.wait()
    state = runner.session.state.probes
    assert [state[i].host for i in ids] == ["plain", "other"]
    assert len({state[i].group for i in ids}) == 1 and state[ids[0]].group
    assert state[same[0]].group != state[ids[0]].group
    assert [state[i].status for i in ids] == ["failed", "ok"]
    keyed = [(i, probes.compare_key(state[i].kind, state[i].status, state[i].summary,
                                    state[i].detail)) for i in ids]
    assert probes.differing(keyed) == set(ids)
    keyed = [(i, probes.compare_key(state[i].kind, state[i].status, state[i].summary,
                                    state[i].detail)) for i in same]
    assert probes.differing(keyed) == set()


def test_differing_highlights_the_odd_one_out():
    assert probes.differing([("a", 1), ("b", 1), ("c", 2)]) == {"c"}
    assert probes.differing([("a", 1), ("b", 2)]) == {"a", "b"}
    assert probes.differing([("a", 1)]) == set()


async def test_rerun_and_templates(tmp_path):
    runner = runner_for(local_host(python=sys.executable), templates=[
        ProbeTemplate(name="cutedsl-import", kind="import", args=["json:dumps"], timeout=9.0),
        ProbeTemplate(name="versions", kind="version", args=["click"]),
    ])
    first = runner.enqueue("localhost", "cutedsl-import", [])
    extra = runner.enqueue("localhost", "versions", ["msgspec"])
    await runner.wait()
    again = runner.rerun(first)
    await runner.wait()
    state = runner.session.state.probes
    assert (state[first].kind, state[first].args, state[first].template) == (
        "import", ["json:dumps"], "cutedsl-import")
    assert state[first].timeout_s == 9.0
    assert state[extra].args == ["click", "msgspec"] and state[extra].status == "ok"
    assert again != first
    assert (state[again].kind, state[again].args, state[again].status) == (
        "import", ["json:dumps"], "ok")
    with pytest.raises(ProbeUsageError, match="unknown probe kind 'nope'.*cutedsl-import"):
        runner.enqueue("localhost", "nope", [])
    with pytest.raises(KeyError):
        runner.enqueue("elsewhere", "import", ["json"])


async def test_events_reach_the_transcript(tmp_path):
    reg = HostRegistry()
    reg.add(local_host(python=sys.executable))
    session = Session(hosts=reg.names, sessions_dir=tmp_path)
    runner = ProbeRunner(session, reg)
    pid = runner.enqueue("localhost", "import", ["no_such_mod_qq"])
    await runner.wait()
    session.close()
    events = [e for e in transcript.read(session.path).events if getattr(e, "probe_id", "") == pid]
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "ProbeQueued" and kinds[1] == "ProbeStarted"
    assert "ProbeOutput" in kinds and kinds[-1] == "ProbeFinished"
    queued, finished = events[0], events[-1]
    assert queued.host == "localhost" and "no_such_mod_qq" in queued.command
    assert (finished.status, finished.exit_status) == ("failed", 1)
    assert finished.duration_s > 0
    assert finished.summary == "ModuleNotFoundError: No module named 'no_such_mod_qq'"


async def test_a_broken_transport_is_an_error_not_a_crash():
    class Broken:
        name = "broken"

        async def run(self, command, timeout=None, stdin=None, limit=None):
            from perftriage.transport.base import TransportError

            raise TransportError("connection refused", kind="refused", host="broken")

        async def close(self):
            return None

    host = local_host("broken")
    host.transport = Broken()
    runner = runner_for(host)
    pid = runner.enqueue("broken", "import", ["json"])
    await runner.wait()
    p = runner.session.state.probes[pid]
    assert p.status == "error" and p.detail["error_kind"] == "refused"
    await asyncio.sleep(0)
