"""The engine killed mid-capture. The view said
"capturing…", then blamed "no decode steps", and the transcript kept nothing
of the attempt. Now the capture says the engine exited, with the pid the
host named before it started, and the investigation keeps the attempt as a
note. The engine is the simulated SGLang server (a real process, the real
HTTP profiling contract), killed with SIGKILL while /start_profile waits."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import urllib.request

import pytest

from perftriage.core.store import transcript
from perftriage.core.store.config import Config
from perftriage.services.hosts.registry import HostRegistry, local_host
from perftriage.services.investigation.session import Session
from perftriage.services.profile.capture import ENGINE_EXITED, IDLE_MESSAGE, CaptureFailed
from perftriage.services.profile.captures import ProfileCaptures
from tests.support.helpers import wait_for
from tests.support.sshd import free_port


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/get_server_info", timeout=1):  # noqa: S310
            return True
    except OSError:
        return False


@pytest.fixture
def engine(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "perftriage.simulator.sglang_sim", "--metrics-port", str(port),
         "--startup-s", "0", "--tp", "2", "--log", str(tmp_path / "sim.log")])
    yield proc, f"http://127.0.0.1:{port}"
    proc.kill()
    proc.wait()


async def answering_with_captures(engine, tmp_path, name: str):
    """Once the simulated engine answers: the cockpit's captures on localhost."""
    _proc, url = engine
    await wait_for(lambda: _answers(url), timeout=60)
    reg = HostRegistry()
    reg.add(local_host())
    session = Session(name, hosts=reg.names, sessions_dir=tmp_path / "sessions")
    return reg, session, ProfileCaptures(session, reg, Config())


async def test_an_engine_killed_mid_capture_is_said_and_recorded(engine, tmp_path):
    proc, url = engine
    _reg, session, captures = await answering_with_captures(engine, tmp_path, "cap")
    said: list[str] = []
    task = asyncio.ensure_future(captures.capture("localhost", url, 600, said.append))
    await wait_for(lambda: any(m.startswith("waiting for rank files") for m in said), timeout=30)
    proc.kill()  # SIGKILL: the engine dies while /start_profile waits for its 600 steps
    proc.wait()
    with pytest.raises(CaptureFailed) as err:
        await asyncio.wait_for(task, timeout=60)
    why = (f"the engine exited during the capture (pid {proc.pid}, exit status unknown: "
           "perftriage did not start it)")
    assert err.value.kind == ENGINE_EXITED and str(err.value) == why
    assert IDLE_MESSAGE not in str(err.value)
    notes = [n.text for n in session.state.notes]
    assert notes == [f"profile capture prof1 of {url} on localhost failed: {why}"]
    session.close()
    assert any(getattr(e, "text", None) == notes[0]
               for e in transcript.read(session.path).events)  # the attempt is kept


async def test_a_capture_of_a_live_idle_engine_still_says_no_steps(engine, tmp_path):
    """The other side: an engine that answers but runs no step (seconds
    mode, nothing written) is still "no decode steps", not an exit."""
    proc, url = engine
    reg, _session, captures = await answering_with_captures(engine, tmp_path, "idle")
    req = captures.request(url, None)
    req.seconds, req.idle_after, req.activities = 0.5, 1.0, ["MEM"]  # MEM alone: no trace
    from perftriage.services.profile.capture import capture

    with pytest.raises(CaptureFailed) as err:
        await capture(reg.get("localhost").transport, req, tmp_path / "dest")
    assert err.value.kind == "idle" and proc.poll() is None


async def test_a_server_perftriage_started_says_its_exit_status(tmp_path):
    """The server started from the cockpit (``S``): its launcher knows how it
    ended, and the capture's failure says so."""
    import os
    import signal

    from perftriage.core.store.config import ServerProfile
    from perftriage.services.logs.follower import LogFollower
    from perftriage.services.logs.server_launcher import ServerLauncher
    from perftriage.services.profile.capture import listening_pid

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    reg = HostRegistry()
    reg.add(local_host())
    session = Session("launched", hosts=reg.names, sessions_dir=tmp_path / "sessions")
    profile = ServerProfile(name="sim", log=str(tmp_path / "server.log"),
                            command=f"{sys.executable} -m perftriage.simulator.sglang_sim "
                                    f"--startup-s 0 --tp 2 --metrics-port {port}")
    servers = ServerLauncher(session, LogFollower(session, reg), [profile])
    try:
        run = servers.start("sim")
        await wait_for(lambda: run.state == "ready" and _answers(url), timeout=60)
        pid = await listening_pid(reg.get("localhost").transport, url)
        assert pid is not None
        said: list[str] = []
        task = asyncio.ensure_future(ProfileCaptures(session, reg, Config()).capture(
            "localhost", url, 600, said.append))
        await wait_for(lambda: any(m.startswith("waiting for rank files") for m in said),
                       timeout=30)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(CaptureFailed) as err:
            await asyncio.wait_for(task, timeout=60)
        assert err.value.kind == ENGINE_EXITED
        assert str(err.value).startswith(f"the engine exited during the capture (pid {pid}, "
                                         "exit status ")
        assert "unknown" not in str(err.value), str(err.value)
    finally:
        await servers.stop_all()
        await servers.follower.close_all()
        session.close()
