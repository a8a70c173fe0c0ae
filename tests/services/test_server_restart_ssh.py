"""Issue 49.4 / 49.7: a server started from the cockpit over a real sshd while
the host's other streams (nvidia-smi, /proc, GPM counters) and the host's own
follow of the server's log file hold the channels OpenSSH allows.

On the H200 the restart recorded "starting" and nothing ran: the fifth
long-lived stream waited, without a word, for a channel that only the
cockpit's exit gave back."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator

import pytest

from tests.support.helpers import wait_for
from perftriage.core.store.config import HostConfig, ServerProfile
from perftriage.services.hosts.registry import Host, HostRegistry
from perftriage.services.investigation.session import Session
from perftriage.services.logs.follower import LogFollower
from perftriage.services.logs.server_launcher import ServerLauncher
from perftriage.transport.ssh import SSHTransport
from perftriage.transport.ssh_options import SshOptions

SIM = f"{sys.executable} -m perftriage.simulator.sglang_sim --startup-s 0.05 --rate 50"
# what the cockpit keeps open on a GPU host besides the log: nvidia-smi, the /proc sampler, GPM
HELD = 3


async def hold(transport: SSHTransport, label: str, started: asyncio.Event) -> None:
    async for _ in transport.stream_batches("while :; do echo x; sleep 1; done", label=label):
        started.set()


def parts(sshd, tmp_path, **kw) -> tuple[SSHTransport, Session, ServerLauncher]:
    cfg = HostConfig(name="gpu1", ssh=sshd.alias, **kw)
    transport = SSHTransport.from_config(cfg, SshOptions(config=sshd.ssh_config))
    reg = HostRegistry()
    reg.add(Host("gpu1", cfg, transport))
    session = Session(sessions_dir=tmp_path / "sessions")
    profile = ServerProfile(name="sim", host="gpu1", command=SIM + " --seed 49",
                            log=str(tmp_path / "server.log"), workdir=str(tmp_path))
    return transport, session, ServerLauncher(session, LogFollower(session, reg), [profile])


@contextlib.asynccontextmanager
async def holding_streams(sshd, tmp_path, **kw) -> AsyncIterator[
        tuple[SSHTransport, Session, ServerLauncher]]:
    """The parts with the host's other long-lived streams (nvidia-smi, /proc,
    GPM) holding their channels; everything stopped and closed on the way out."""
    transport, session, servers = parts(sshd, tmp_path, **kw)
    tasks = []
    try:
        for name in ("nvidia-smi", "proc", "GPM counters")[:HELD]:
            up = asyncio.Event()
            tasks.append(asyncio.create_task(hold(transport, name, up)))
            await asyncio.wait_for(up.wait(), 20)
        yield transport, session, servers
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await servers.stop_all()
        await servers.follower.close_all()
        await transport.close()
        session.close()


@pytest.mark.ssh
async def test_a_start_with_the_log_also_followed_gets_a_channel_and_is_followed_once(
        sshd, tmp_path) -> None:
    log = tmp_path / "server.log"
    log.write_text("started outside the cockpit, then stopped\n")
    async with holding_streams(sshd, tmp_path) as (_transport, session, servers):
        file_sid = servers.follower.open_file("gpu1", str(log))  # the host's `logs`
        await wait_for(lambda: session.state.logs[file_sid].total_lines >= 1, timeout=20)
        run = servers.start("sim", "--error-every 0")
        await wait_for(lambda: run.state != "starting", timeout=20)
        assert run.state == "ready", [e.detail for e in session.state.server_events]
        # the file is followed once: its lines are in the host's log source only
        await wait_for(lambda: len(session.state.logs[file_sid].metrics.gen_tps) >= 2, timeout=20)
        fired = [(sid, ln) for sid, src in session.state.logs.items()
                 for ln in src.lines if "fired up" in ln]
        assert [sid for sid, _ in fired] == [file_sid]
        # one file, one tab: the run's stream (its guard's marks) is shown in the follow's
        assert session.state.logs[run.source_id].shown_in == file_sid
        run = await servers.restart("sim", "--error-every 0")
        await wait_for(lambda: run.state != "starting", timeout=20)
        assert run.state == "ready", [e.detail for e in session.state.server_events]
        assert session.state.logs[run.source_id].shown_in == file_sid
        assert [sid for sid, src in session.state.logs.items() if not src.shown_in] == [file_sid]
        await servers.stop("sim")
        assert "shutting down gracefully" in log.read_text()


@pytest.mark.ssh
async def test_no_channel_left_fails_the_start_naming_what_holds_them(sshd, tmp_path) -> None:
    """A host allowing fewer channels (max_channels 4: one shell, three
    streams held): the start fails within the wait, saying what holds them."""
    async with holding_streams(sshd, tmp_path, max_channels=4) as (transport, session, servers):
        transport.stream_wait_s = 1.0
        run = servers.start("sim")
        await wait_for(lambda: run.state != "starting", timeout=20)
        failed = session.state.server_events[-1]
        assert run.state == "failed" and failed.state == "failed"
        assert "no SSH channel" in failed.detail
        for held in ("nvidia-smi", "proc", "GPM counters", "max_channels 4"):
            assert held in failed.detail


async def test_following_the_log_a_server_started_here_writes_is_its_output(tmp_path) -> None:
    """`o` on the log a server started from the cockpit appends to: the
    server's own source, not a second read of the same lines."""
    from perftriage.services.hosts.registry import local_host

    reg = HostRegistry()
    reg.add(local_host())
    session = Session(sessions_dir=tmp_path / "sessions")
    log = tmp_path / "server.log"
    profile = ServerProfile(name="sim", command=SIM + " --seed 50", log=str(log))
    servers = ServerLauncher(session, LogFollower(session, reg), [profile])
    try:
        run = servers.start("sim", "--error-every 0")
        await wait_for(lambda: run.state == "ready")
        assert servers.follower.open_file("localhost", str(log)) == run.source_id
        assert len(session.state.logs) == 1
    finally:
        await servers.stop_all()
        await servers.follower.close_all()
        session.close()
