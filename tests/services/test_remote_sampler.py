"""The streaming remote sampler, driven over the local transport with the
fake nvidia-smi (same Transport protocol as SSH; see test_remote_sampler_ssh
for the loopback sshd version)."""

from __future__ import annotations

import asyncio
import os
import shlex
from pathlib import Path

import pytest

from tests.support.helpers import FAKE_NVIDIA_SMI_DIR, wait_for
from perftriage.core.model import events as ev
from perftriage.core.parse import host_output, proc
from perftriage.services.sampling import remote_sampler as rs
from perftriage.transport.local import LocalTransport

FAKE_DIR = FAKE_NVIDIA_SMI_DIR


def fake_transport(tmp_path: Path, path_dirs: str | None = None) -> tuple[LocalTransport, Path, Path]:
    control = tmp_path / "control"
    control.write_text("ok")
    log = tmp_path / "nvsmi.log"
    path = path_dirs if path_dirs is not None else f"{FAKE_DIR}:{os.environ['PATH']}"
    preamble = (
        f"export PATH={shlex.quote(path)} FAKE_NVSMI_CONTROL={shlex.quote(str(control))}"
        f" FAKE_NVSMI_LOG={shlex.quote(str(log))}"
    )
    return LocalTransport("fakehost", preamble), control, log


class Sink:
    def __init__(self) -> None:
        self.events: list[ev.Event] = []

    def __call__(self, e: ev.Event) -> None:
        self.events.append(e)

    @property
    def samples(self) -> list[ev.HostSample]:
        return [e for e in self.events if isinstance(e, ev.HostSample)]

    def of(self, cls):
        return [e for e in self.events if isinstance(e, cls)]


async def start(sampler: rs.RemoteSampler) -> asyncio.Task:
    return asyncio.create_task(sampler.run())


async def stop(task: asyncio.Task) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


def starts(log: Path, kind: str = "--query-gpu") -> int:
    if not log.exists():
        return 0
    return sum(1 for line in log.read_text().splitlines() if kind in line)


async def test_streams_gpus_cpu_mem_load(tmp_path):
    transport, _, log = fake_transport(tmp_path)
    sink = Sink()
    sampler = rs.RemoteSampler("fakehost", transport, sink, interval=0.1)
    task = await start(sampler)
    try:
        await wait_for(lambda: any(s.cpu_pct is not None and len(s.gpus) == 2 for s in sink.samples))
        await wait_for(lambda: len(sink.samples) >= 5)
        await wait_for(lambda: any("topo" in e.info for e in sink.of(ev.HostInfo)))
    finally:
        await stop(task)
    s = sink.samples[-1]
    assert [g.index for g in s.gpus] == [0, 1]
    assert s.gpus[0].name == "NVIDIA H200" and s.gpus[0].mem_total_mib == 143771.0
    assert s.gpus[0].power_limit_w == 700.0 and s.gpus[0].sm_clock_max_mhz == 1980.0
    assert s.mem_total_bytes and s.mem_used_bytes and s.load1 is not None
    assert s.per_cpu_pct and s.gpu_error is None and s.gpu_age_s is None
    info = next(e for e in sink.of(ev.HostInfo) if "topo" in e.info).info
    assert info["topo"]["columns"][:2] == ["GPU0", "GPU1"]
    assert info["topo"]["rows"][0][:3] == ["GPU0", "X", "NV18"]
    assert [e.state for e in sink.of(ev.HostStatus)][:2] == ["connecting", "up"]
    # one long-running nvidia-smi for the whole run: no spawn per sample
    assert starts(log) == 1


async def test_na_fields_become_none(tmp_path):
    transport, control, _ = fake_transport(tmp_path)
    control.write_text("na")
    sink = Sink()
    task = await start(rs.RemoteSampler("fakehost", transport, sink, interval=0.1))
    try:
        await wait_for(lambda: any(s.gpus for s in sink.samples))
    finally:
        await stop(task)
    g = next(s for s in sink.samples if s.gpus).gpus[0]
    assert g.util_pct is None and g.power_w is None and g.temp_c is None and g.pstate is None
    assert g.uuid.startswith("GPU-fake")


async def test_dead_nvidia_smi_is_restarted(tmp_path):
    transport, control, log = fake_transport(tmp_path)
    sink = Sink()
    sampler = rs.RemoteSampler("fakehost", transport, sink, interval=0.1, backoff_max_s=0.2)
    task = await start(sampler)
    try:
        await wait_for(lambda: any(s.gpus for s in sink.samples))
        control.write_text("die")  # the running stream exits at its next period
        await wait_for(lambda: starts(log) >= 3)
        control.write_text("ok")
        n = len(sink.samples)
        await wait_for(lambda: len(sink.samples) > n + 2 and sink.samples[-1].gpu_age_s is None
                       and sink.samples[-1].gpus)
    finally:
        await stop(task)
    assert sampler.gpu.starts >= 3
    assert "exited" in (sampler.gpu.last_error or "")


async def test_stalled_nvidia_smi_goes_stale_then_restarts(tmp_path):
    transport, control, log = fake_transport(tmp_path)
    sink = Sink()
    sampler = rs.RemoteSampler("fakehost", transport, sink, interval=0.1, stall_s=0.6,
                               backoff_max_s=0.2)
    task = await start(sampler)
    try:
        await wait_for(lambda: any(s.gpus for s in sink.samples))
        control.write_text("stall")
        await wait_for(lambda: any(s.gpu_age_s is not None for s in sink.samples))
        stale = next(s for s in sink.samples if s.gpu_age_s is not None)
        assert stale.gpus and "no samples" in (stale.gpu_error or "")
        await wait_for(lambda: starts(log) >= 2)  # the watchdog killed and restarted it
        control.write_text("ok")
        await wait_for(lambda: sink.samples[-1].gpu_age_s is None and sink.samples[-1].gpu_error is None)
    finally:
        await stop(task)
    assert "stalled" in (sampler.gpu.last_error or "")
    # CPU/RAM kept flowing while the GPU stream was stale
    assert stale.cpu_pct is not None


async def test_no_nvidia_smi_says_no_gpu(tmp_path):
    transport, _, _ = fake_transport(tmp_path, path_dirs="/nonexistent-bin:/usr/bin:/bin")
    if os.path.exists("/usr/bin/nvidia-smi"):
        pytest.skip("a real nvidia-smi is installed here")
    sink = Sink()
    task = await start(rs.RemoteSampler("fakehost", transport, sink, interval=0.1))
    try:
        await wait_for(lambda: any(s.gpu_error and s.mem_total_bytes for s in sink.samples))
    finally:
        await stop(task)
    s = next(s for s in sink.samples if s.gpu_error)
    assert s.gpu_error == "no NVIDIA GPU (nvidia-smi not found)" and s.gpus == []


async def test_refresh_detail_gets_processes(tmp_path):
    transport, _, _ = fake_transport(tmp_path)
    sink = Sink()
    sampler = rs.RemoteSampler("fakehost", transport, sink, interval=0.1)
    task = await start(sampler)
    try:
        await wait_for(lambda: any(s.gpus for s in sink.samples))
        info = await sampler.refresh_detail()
    finally:
        await stop(task)
    assert info["processes"] == {"0": [{"pid": 4242, "name": "python3", "used_mib": 31722.0}]}


def test_proc_frame_and_cpu_pct():
    frames = proc.ProcFrames().feed([
        "junk before the first frame",
        "@@proc", "cpu  100 0 100 800 0 0 0 0 0 0", "cpu0 50 0 50 400 0 0 0 0 0 0",
        "MemTotal:       1000 kB", "MemFree:  100 kB", "MemAvailable:    400 kB",
        "loadavg 1.50 0.50 0.25 1/89 15850", "@@end",
        "@@proc", "cpu  200 0 200 1400 0 0 0 0 0 0", "@@end",
    ])
    assert len(frames) == 2
    a, b = frames
    assert a.mem_total == 1000 * 1024 and a.mem_available == 400 * 1024
    assert a.load == (1.5, 0.5, 0.25) and len(a.per_cpu) == 1
    assert proc.cpu_pct(a.cpu, b.cpu) == 25.0
    assert proc.cpu_pct(None, b.cpu) is None


def test_a_hostile_proc_frame_leaves_out_bad_fields_never_a_traceback():
    """A host's /proc text is remote text: ``MemTotal:`` alone, a count in
    superscript digits (``"²".isdigit()`` is True, ``int("²")`` raises) or
    5,000 digits raised ValueError/IndexError out of the sampler's parser."""
    f = proc.parse_proc_frame([
        "cpu  100 ² 100 800", "cpu0 50 ٣ 50 400", "MemTotal:", "MemFree: ² kB",
        "MemAvailable: " + "9" * 5000 + " kB", "loadavg x y z"])
    assert f.cpu == [100, 100, 800] and f.per_cpu == [[50, 50, 400]]
    assert f.mem_total is None and f.mem_free is None and f.mem_available is None
    assert f.load is None


def test_commands_are_quoted():
    cmd = rs.proc_command(0.5)
    assert "bash -c '" in cmd and "perftriage-proc 0.5" in cmd
    assert rs.gpu_command(1.0).endswith("--format=csv,noheader,nounits -lms 1000")


def test_parse_info_bandwidth():
    info = host_output.parse_info("@@topo\nno devices\n@@nvml\n{\"0\": [6016, 3201]}\n@@end\n")
    assert info["bandwidth_gbs"] == {"0": pytest.approx(4814.4, abs=0.1)}
    assert info["topo_error"] == "no devices"


class BusyTransport:
    """Streams that always have a batch ready: the sampler is cancelled while
    a read has just completed (Python 3.11's ``asyncio.wait_for`` then
    returned the batch and swallowed the cancellation: ``stop`` hung)."""

    name = "busy"

    async def stream_batches(self, command: str):
        while True:
            await asyncio.sleep(0)
            yield ["x"]

    async def run(self, command: str, timeout=None, stdin=None, limit=None):
        await asyncio.sleep(3600)


async def test_cancel_while_a_batch_is_ready_stops_the_sampler():
    for _ in range(20):
        sampler = rs.RemoteSampler("busy", BusyTransport(), Sink(), interval=0.01)
        task = await start(sampler)
        await asyncio.sleep(0.03)
        task.cancel()
        # not stop(): a swallowed cancel would hang it
        await asyncio.wait({task}, timeout=5)
        assert task.done(), "the sampler ignored its cancellation"
        await stop(task)
