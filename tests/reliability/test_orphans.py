"""Nothing left behind: when the SSH connection drops or the client
dies (SIGKILL included), every remote process perftriage started -- the
pool's bash, a probe's ``sleep 300``, a followed log's ``tail``, an
``nvidia-smi -lms`` stream -- ends within 10 s.

The loopback sshd runs on this machine, so the test looks at the sshd side
directly: every session of the test's sshd carries a unique environment
variable (sshd ``SetEnv``), and ``/proc/*/environ`` shows which processes
started under it are still alive, whoever their parent is by then.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.helpers import FAKE_NVIDIA_SMI_DIR, wait_for
from tests.support.sshd import SshServer, child_pids

from perftriage.services.logs.follower import follow_command
from perftriage.services.sampling.remote_sampler import gpu_command
from perftriage.transport.ssh import SSHTransport

pytestmark = pytest.mark.ssh

FAKE_BIN = FAKE_NVIDIA_SMI_DIR
GONE_WITHIN_S = 10.0


def tagged_processes(tag: str) -> dict[int, str]:
    """pid -> command line of every live process whose environment holds ``tag``."""
    found = {}
    needle = f"PT_ORPHAN_TAG={tag}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            stat = (entry / "stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found[int(entry.name)] = cmd.strip()
    return found


def session_sshds(server: SshServer) -> list[int]:
    """The per-connection sshd processes under the listener (not the listener)."""
    out, todo = [], [server.proc.pid]
    while todo:
        for pid in child_pids(todo.pop()):
            try:
                comm = Path(f"/proc/{pid}/comm").read_text()
            except OSError:  # exited meanwhile
                continue
            if comm.startswith("sshd"):
                out.append(pid)
                todo.append(pid)
    return out


@pytest.fixture
def tagged_sshd(make_sshd):
    tag = secrets.token_hex(8)
    path = f"{FAKE_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    server = make_sshd(env={"PT_ORPHAN_TAG": tag, "PATH": path})
    return server, tag


def everything_started(procs: dict[int, str], sleep_s: int) -> bool:
    cmds = list(procs.values())
    return (any(f"sleep {sleep_s}" in c for c in cmds) and any("tail -n" in c for c in cmds)
            and any("nvidia-smi" in c and "-lms" in c for c in cmds)
            and any("bash --noprofile --norc" in c for c in cmds))


async def test_a_dropped_connection_leaves_nothing_behind(tagged_sshd, tmp_path):
    server, tag = tagged_sshd
    log = tmp_path / "server.log"
    log.write_text("line\n")
    t = SSHTransport("box", server.alias, ssh_config=server.ssh_config, keepalive_interval=1)

    async def drain(command: str) -> None:
        async for _ in t.stream_batches(command):
            pass

    tasks = [asyncio.create_task(t.run("sleep 301")),
             asyncio.create_task(drain(follow_command(str(log)))),
             asyncio.create_task(drain(gpu_command(0.2)))]
    try:
        await wait_for(lambda: everything_started(tagged_processes(tag), 301), timeout=30)
        for pid in session_sshds(server):  # the connection drops: its sshd dies at once
            os.kill(pid, signal.SIGKILL)
        dropped = time.monotonic()
        await wait_for(lambda: not tagged_processes(tag), timeout=GONE_WITHIN_S + 5)
        assert time.monotonic() - dropped <= GONE_WITHIN_S, tagged_processes(tag)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await t.close()


CLIENT = r"""
import asyncio, sys
from perftriage.services.logs.follower import follow_command
from perftriage.services.sampling.remote_sampler import gpu_command
from perftriage.transport.ssh import SSHTransport

async def main(alias, config, log):
    t = SSHTransport("box", alias, ssh_config=config)
    async def drain(command):
        async for _ in t.stream_batches(command):
            pass
    await asyncio.gather(t.run("sleep 302"), drain(follow_command(log)), drain(gpu_command(0.2)))

asyncio.run(main(*sys.argv[1:]))
"""


async def test_a_killed_client_leaves_nothing_behind(tagged_sshd, tmp_path):
    server, tag = tagged_sshd
    log = tmp_path / "server.log"
    log.write_text("line\n")
    client = subprocess.Popen([sys.executable, "-c", CLIENT, server.alias,
                               str(server.ssh_config), str(log)])
    try:
        await wait_for(lambda: everything_started(tagged_processes(tag), 302), timeout=30)
        client.send_signal(signal.SIGKILL)
        client.wait()
        killed = time.monotonic()
        await wait_for(lambda: not tagged_processes(tag), timeout=GONE_WITHIN_S + 5)
        assert time.monotonic() - killed <= GONE_WITHIN_S, tagged_processes(tag)
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()


async def test_a_closed_transport_leaves_nothing_behind(tagged_sshd, tmp_path):
    server, tag = tagged_sshd
    t = SSHTransport("box", server.alias, ssh_config=server.ssh_config)
    task = asyncio.create_task(t.run("sleep 303"))
    try:
        await wait_for(lambda: any("sleep 303" in c for c in tagged_processes(tag).values()),
                       timeout=30)
    finally:
        await t.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    await wait_for(lambda: not tagged_processes(tag), timeout=GONE_WITHIN_S)
