"""The remote sampler over a real OpenSSH sshd on 127.0.0.1 with the fake
nvidia-smi on the remote PATH: streaming, [N/A], die -> restart, stall ->
stale then restart."""

from __future__ import annotations

import asyncio
import os
import shlex
from pathlib import Path

import pytest

from tests.support.helpers import FAKE_NVIDIA_SMI_DIR, wait_for
from tests.services.test_remote_sampler import Sink, starts
from perftriage.core.model import events as ev
from perftriage.services.sampling import remote_sampler as rs

pytestmark = pytest.mark.ssh

FAKE_DIR = FAKE_NVIDIA_SMI_DIR


def ssh_transport(sshd, tmp_path: Path):
    from perftriage.transport.ssh import SSHTransport

    control = tmp_path / "control"
    control.write_text("ok")
    log = tmp_path / "nvsmi.log"
    path = f"{FAKE_DIR}:{os.environ['PATH']}"
    preamble = (
        f"export PATH={shlex.quote(path)}"
        f" FAKE_NVSMI_CONTROL={shlex.quote(str(control))} FAKE_NVSMI_LOG={shlex.quote(str(log))}"
    )
    t = SSHTransport("loopback", sshd.alias, ssh_config=sshd.ssh_config, preamble=preamble)
    return t, control, log


async def test_over_ssh_stream_na_die_stall(sshd, tmp_path):
    transport, control, log = ssh_transport(sshd, tmp_path)
    sink = Sink()
    sampler = rs.RemoteSampler("loopback", transport, sink, interval=0.2, stall_s=1.0,
                               backoff_max_s=0.2)
    task = asyncio.create_task(sampler.run())
    try:
        await wait_for(lambda: any(len(s.gpus) == 2 and s.cpu_pct is not None
                                   for s in sink.samples), timeout=20)
        assert starts(log) == 1
        if os.access("/proc/pressure/cpu", os.R_OK):  # the loop reads PSI where the kernel has it
            assert any(s.cpu_psi_some is not None for s in sink.samples)
        control.write_text("na")
        await wait_for(lambda: sink.samples[-1].gpus and sink.samples[-1].gpus[0].util_pct is None)
        control.write_text("die")
        await wait_for(lambda: starts(log) >= 3, timeout=20)
        control.write_text("stall")
        await wait_for(lambda: sink.samples[-1].gpu_age_s is not None, timeout=20)
        assert sink.samples[-1].cpu_pct is not None  # /proc kept flowing
        control.write_text("ok")
        await wait_for(lambda: sink.samples[-1].gpu_age_s is None
                       and sink.samples[-1].gpus and sink.samples[-1].gpus[0].util_pct is not None,
                       timeout=20)
        info = await sampler.refresh_detail()
        assert info["processes"]["0"][0]["pid"] == 4242
        assert any("topo" in e.info for e in sink.of(ev.HostInfo))
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await transport.close()
    assert "stalled" in (sampler.gpu.last_error or "") or "exited" in (sampler.gpu.last_error or "")
