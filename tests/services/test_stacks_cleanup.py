"""A stacks probe leaves nothing behind however it ends (issue 47 item 12):
cancelled (the transport kills its process group), its script killed alone
(SIGKILL: no trap runs), or its SSH connection dropped: py-spy dies with the
script (its parent-death signal) and the probe's temp dir is removed by the
reaper it left outside its process group, not by the day-old sweep.

A real py-spy records a real stall target for 60 s; each test ends the probe
a moment after py-spy started and looks at the host's processes and files."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from perftriage.core.probe_kinds.kind import HostContext
from perftriage.core.probe_kinds.stacks_kind import STACKS_KIND, own_pyspy
from perftriage.transport.local import LocalTransport
from perftriage.transport.ssh import SSHTransport
from tests.reliability.test_orphans import session_sshds
from tests.support.helpers import wait_for
from tests.support.stall_target import running

pytestmark = pytest.mark.skipif(own_pyspy() is None, reason="py-spy is not installed")

GONE_WITHIN_S = 10.0


def pyspies(target: int) -> dict[int, str]:
    """pid -> temp dir of each live py-spy recording ``target`` for a stacks probe."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        words = [a.decode(errors="replace") for a in argv]
        if state != "Z" and "record" in words and str(target) in words and "-o" in words:
            out = words[words.index("-o") + 1]
            if "perftriage-stacks-" in out:
                found[int(entry.name)] = os.path.dirname(out)
    return found


def _command(target: int, local: bool = True) -> str:
    return STACKS_KIND.build(["--pid", str(target), "--seconds", "60"],
                             HostContext(python=sys.executable, local=local))


async def _started(target: int) -> tuple[int, str]:
    await wait_for(lambda: pyspies(target), timeout=30)
    ((pid, work),) = pyspies(target).items()
    assert os.path.isdir(work)
    return pid, work


async def _nothing_left(target: int, work: str) -> None:
    await wait_for(lambda: not pyspies(target) and not os.path.exists(work),
                   timeout=GONE_WITHIN_S)


async def test_a_cancelled_probe_leaves_no_py_spy_and_no_temp_dir():
    with running() as (proc, _):
        task = asyncio.create_task(LocalTransport().run(_command(proc.pid)))
        _, work = await _started(proc.pid)
        task.cancel()  # the transport kills the probe's process group
        await asyncio.gather(task, return_exceptions=True)
        await _nothing_left(proc.pid, work)


async def test_a_script_killed_alone_takes_its_py_spy_and_temp_dir_with_it():
    with running() as (proc, _):
        probe = subprocess.Popen(["bash", "-c", _command(proc.pid)], start_new_session=True,
                                 stdout=subprocess.DEVNULL)
        try:
            pyspy, work = await _started(proc.pid)
            script = int(Path(f"/proc/{pyspy}/stat").read_text().rsplit(")", 1)[1].split()[1])
            os.kill(script, signal.SIGKILL)  # no trap runs; py-spy's parent is gone
            await _nothing_left(proc.pid, work)
        finally:
            os.killpg(probe.pid, signal.SIGKILL)
            probe.wait()


@pytest.mark.ssh
async def test_a_dropped_connection_leaves_no_py_spy_and_no_temp_dir(sshd):
    t = SSHTransport("box", sshd.alias, ssh_config=sshd.ssh_config, keepalive_interval=1)
    with running() as (proc, _):
        task = asyncio.create_task(t.run(_command(proc.pid, local=False)))
        try:
            _, work = await _started(proc.pid)
            for pid in session_sshds(sshd):  # the connection drops: its sshd dies at once
                os.kill(pid, signal.SIGKILL)
            await _nothing_left(proc.pid, work)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await t.close()
