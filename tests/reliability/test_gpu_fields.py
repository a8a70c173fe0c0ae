"""GPU telemetry degrades per field: a field the host's nvidia-smi
refuses (``Field "X" is not a valid field to query.``, no rows at all) is
dropped and the query retried; the other fields still show, and the host's
pane says which field is missing. When no GPU can show (the index itself
refused), the pane says why. Over the loopback sshd with the fake
nvidia-smi refusing fields, and on the local nvidia-smi fallback."""

from __future__ import annotations

import asyncio
import os
import shlex
from pathlib import Path

import pytest

from tests.support.helpers import FAKE_NVIDIA_SMI_DIR, wait_for
from tests.services.test_remote_sampler import Sink, starts

from perftriage.core.parse import nvsmi
from perftriage.services.sampling import remote_sampler as rs
from perftriage.services.sampling.local_sampler import SmiReader

FAKE_DIR = FAKE_NVIDIA_SMI_DIR
FAKE = FAKE_DIR / "nvidia-smi"


def transport(sshd, tmp_path: Path, refuse: str):
    from perftriage.transport.ssh import SSHTransport

    log = tmp_path / "nvsmi.log"
    path = f"{FAKE_DIR}:{os.environ['PATH']}"
    preamble = (f"export PATH={shlex.quote(path)} FAKE_NVSMI_LOG={shlex.quote(str(log))}"
                f" FAKE_NVSMI_REFUSE={shlex.quote(refuse)}")
    return SSHTransport("gpu1", sshd.alias, ssh_config=sshd.ssh_config, preamble=preamble), log


def test_the_refusal_names_its_field_and_only_that_field_is_dropped():
    line = 'Field "clocks.max.mem" is not a valid field to query.'
    assert nvsmi.refused_field(line) == "clocks.max.mem"
    assert nvsmi.refused_field("Field \u201cpower.draw\u201d is not a valid field to query.") \
        == "power.draw"
    assert nvsmi.refused_field("0, NVIDIA H200, GPU-1, 42") is None
    fields = nvsmi.QueryFields()
    assert fields.drop_refused(["", line]) == "clocks.max.mem"
    assert "clocks.max.mem" not in fields.fields and len(fields.fields) == len(nvsmi.QUERY_FIELDS) - 1
    assert fields.drop_refused([line]) is None  # already dropped: nothing more to try
    assert fields.drop_refused(['Field "index" is not a valid field to query.']) is None
    assert "index" in fields.fields
    assert "clocks.max.mem" in fields.note


@pytest.mark.ssh
async def test_a_refused_field_is_dropped_and_the_rest_still_show(sshd, tmp_path):
    t, log = transport(sshd, tmp_path, "clocks.max.mem,power.limit")
    sink = Sink()
    sampler = rs.RemoteSampler("gpu1", t, sink, interval=0.2, stall_s=2.0, backoff_max_s=0.2)
    task = asyncio.create_task(sampler.run())
    try:
        await wait_for(lambda: any(len(s.gpus) == 2 for s in sink.samples), timeout=30)
        sample = next(s for s in sink.samples if s.gpus)
        g = sample.gpus[0]
        assert g.util_pct is not None and g.mem_used_mib is not None and g.name == "NVIDIA H200"
        assert g.mem_clock_max_mhz is None and g.power_limit_w is None  # the refused ones
        assert "clocks.max.mem" in sample.gpu_error and "power.limit" in sample.gpu_error
        assert sorted(sampler.fields.refused) == ["clocks.max.mem", "power.limit"]
        assert starts(log) == 3  # each refusal: dropped, retried once, no backoff
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await t.close()


@pytest.mark.ssh
async def test_no_gpu_at_all_says_why(sshd, tmp_path):
    t, _log = transport(sshd, tmp_path, "index")
    sink = Sink()
    sampler = rs.RemoteSampler("gpu1", t, sink, interval=0.2, stall_s=2.0, backoff_max_s=0.2)
    task = asyncio.create_task(sampler.run())
    try:
        await wait_for(lambda: any(s.gpu_error and "index" in s.gpu_error for s in sink.samples),
                       timeout=30)
        assert not any(s.gpus for s in sink.samples)
        # the host itself still shows
        await wait_for(lambda: any(s.cpu_pct is not None for s in sink.samples), timeout=30)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await t.close()


@pytest.mark.ssh
async def test_status_snapshot_degrades_per_field_too(sshd, tmp_path):
    from perftriage.core.store.config import HostConfig
    from perftriage.services.hosts.registry import Host

    t, _log = transport(sshd, tmp_path, "temperature.gpu")
    host = Host("gpu1", HostConfig(name="gpu1", ssh=sshd.alias), t)
    try:
        out = await rs.snapshot_host(host, timeout=30, cpu_window_s=0.1)
    finally:
        await t.close()
    assert out["ok"] and len(out["gpus"]) == 2
    assert out["gpus"][0]["util_pct"] is not None and out["gpus"][0]["temp_c"] is None
    assert "temperature.gpu" in out["gpu_error"]


def test_local_nvidia_smi_fallback_degrades_per_field(monkeypatch):
    monkeypatch.setenv("FAKE_NVSMI_REFUSE", "utilization.memory")
    reader = SmiReader(str(FAKE))
    gpus = reader.read()
    assert len(gpus) == 2 and gpus[0].util_pct is not None and gpus[0].mem_util_pct is None
    assert "utilization.memory" in reader.error
