"""GPM counter sources: local NVML GPM on a fake 8-device NVML,
honest n/a reasons, stuck counters; the remote dmon stream over the real
loopback sshd with the fake nvidia-smi (one process for many samples)."""

from __future__ import annotations

import asyncio
import os
import shlex
from pathlib import Path

import pytest

from tests.support.fake_pynvml import FakeNvml
from tests.support.helpers import FAKE_NVIDIA_SMI_DIR, SUPPORT, wait_for
from tests.services.test_remote_sampler import Sink
from perftriage.core.gpus import peak_bandwidth
from perftriage.core.model import events as ev
from perftriage.services.sources import gpm_remote as gr
from perftriage.services.sources import gpm_local as gs
from perftriage.transport.local import LocalTransport

FAKE_DIR = FAKE_NVIDIA_SMI_DIR
H200_PEAK = 4814.3


def test_local_reader_eight_gpus():
    nv = FakeNvml(n=8)
    reader = gs.NvmlGpm(nv)
    assert reader.error is None and len(reader.devices) == 8
    first = reader.read()
    assert all(c.dram_busy_pct is None for c in first)  # one sample: nothing to diff yet
    second = reader.read()
    assert [c.dram_busy_pct for c in second] == [50.0 + i for i in range(8)]
    assert second[3].dram_bw_gbs == pytest.approx(0.53 * H200_PEAK, abs=0.1)
    assert second[0].peak_gbs == H200_PEAK and reader.peak_source.startswith("nvml")
    assert second[2].nvlink_tx_gbs == pytest.approx(2048 * 1024 * 1024 / 1e9, abs=0.01)
    assert nv.calls == 16  # one GPM sample per GPU per interval
    reader.close()
    assert nv.freed == 16


@pytest.mark.parametrize(("mode", "words"), [
    ("pre-hopper", "pre-Hopper"), ("mig", "MIG"), ("old-driver", "driver too old"),
    ("in-use", "another profiler"), ("no-driver", "no NVIDIA driver")])
async def test_local_unavailable_says_why_never_zero(mode, words):
    sink = Sink()
    src = gs.LocalGpmSource("localhost", sink, nvml=FakeNvml(n=2, mode=mode))
    await asyncio.wait_for(src.run(), 5)  # returns: nothing to sample
    (e,) = sink.of(ev.GpuCountersSample)
    assert e.source == "unavailable" and words in e.error and e.gpus == []
    assert src.state == "down" and words in src.reason


async def test_local_source_emits_once_per_interval_and_flags_stuck():
    sink = Sink()
    src = gs.LocalGpmSource("localhost", sink, nvml=FakeNvml(n=2, mode="stuck"))
    src.interval = 0.01  # the 1 Hz floor is for recording; the test runs faster
    task = asyncio.create_task(src.run())
    try:
        await wait_for(lambda: len(sink.of(ev.GpuCountersSample)) >= 4)
    finally:
        await src.stop()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    got = sink.of(ev.GpuCountersSample)
    assert got[0].source == "nvml-gpm" and got[0].gpus[0].dram_busy_pct == 0
    assert not got[0].gpus[0].stuck and got[3].gpus[0].stuck
    assert gs.LocalGpmSource("h", sink).interval == 1.0  # never faster than 1 Hz by default


def peaks(index):
    return "NVIDIA H200", peak_bandwidth("NVIDIA H200", measured_gbs=H200_PEAK)


def fake_env(tmp_path, mode="ok"):
    control = tmp_path / "control"
    control.write_text(mode)
    log = tmp_path / "nvsmi.log"
    path = f"{FAKE_DIR}:{os.environ['PATH']}"
    preamble = (f"export PATH={shlex.quote(path)} FAKE_NVSMI_DMON_DELAY=0.05"
                f" FAKE_NVSMI_CONTROL={shlex.quote(str(control))} FAKE_NVSMI_LOG={shlex.quote(str(log))}")
    return preamble, control, log


def with_fake_pynvml(preamble: str, mode: str = "ok") -> str:
    tests = SUPPORT
    path = f"{tests / 'fake_pynvml_module'}:{tests}"
    return f"{preamble} PYTHONPATH={shlex.quote(path)} FAKE_NVML_MODE={shlex.quote(mode)}"


async def run_until(src, predicate, timeout=20):
    task = asyncio.create_task(src.run())
    try:
        await wait_for(predicate, timeout=timeout)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_dmon_unsupported_reason_and_restart(tmp_path):
    preamble, control, log = fake_env(tmp_path, "gpm-unsupported")
    sink = Sink()
    t = LocalTransport("box", preamble)
    src = gr.RemoteGpmSource("box", t, sink, peaks, backoff_max_s=0.1, min_interval_s=0.05)
    await run_until(src, lambda: sink.of(ev.GpuCountersSample))
    (e,) = sink.of(ev.GpuCountersSample)
    assert e.source == "unavailable" and "not supported" in e.error and src.state == "down"
    await t.close()


@pytest.mark.ssh
async def test_dmon_over_ssh_one_process_many_samples(sshd, tmp_path):
    from perftriage.transport.ssh import SSHTransport

    preamble, control, log = fake_env(tmp_path)
    transport = SSHTransport("loopback", sshd.alias, ssh_config=sshd.ssh_config, preamble=preamble)
    sink = Sink()
    src = gr.RemoteGpmSource("loopback", transport, sink, peaks, backoff_max_s=0.2,
                        min_interval_s=0.05, stall_s=15.0)
    try:
        await run_until(src, lambda: len(sink.of(ev.GpuCountersSample)) >= 5, timeout=60)
        got = sink.of(ev.GpuCountersSample)
        assert all(e.source == "nvidia-smi-dmon" for e in got)
        g0, g1 = got[-1].gpus
        assert (g0.dram_busy_pct, g1.dram_busy_pct) == (56, 57)
        assert g0.dram_bw_gbs == pytest.approx(0.56 * H200_PEAK, abs=0.1)
        assert g0.name == "NVIDIA H200" and got[-1].peak_source.startswith("nvml")
        starts = log.read_text().splitlines()
        assert len(starts) == 1 and "dmon --gpm-metrics 10,2,3,5 -d 1" in starts[0]
        control.write_text("die")  # dmon exits: restarted, the stream resumes
        await asyncio.sleep(0.3)
        control.write_text("ok")
        before = len(sink.of(ev.GpuCountersSample))
        await run_until(src, lambda: len(sink.of(ev.GpuCountersSample)) >= before + 2, timeout=60)
        assert len(log.read_text().splitlines()) >= 2
    finally:
        await transport.close()


def test_gap_monitor_records_once_per_new_counters_and_only_with_inputs():
    from perftriage.core.analysis import counters as cnt
    from perftriage.core.model.reducer import apply
    from perftriage.core.model.state import SessionState
    from perftriage.services.sources.gap_monitor import GapMonitor

    state = SessionState()
    sink = Sink()
    mon = GapMonitor(state, sink, registry=None)
    line = ("[2026-12-01 01:01:40 TP0] Decode batch, #running-req: 1, #token: 108, token usage: "
            "0.01, cuda graph: True, gen throughput (token/s): 108.00, #queue-req: 0")
    for e in (ev.LogSourceOpened(source_id="l", host="h", path="/x"),
              ev.LogLines(source_id="l", lines=[line]),
              ev.GpuCountersSample(host="h", source="nvml-gpm", gpus=[
                  cnt.make_counters(0, peak_gbs=H200_PEAK, dram_busy_pct=90)])):
        apply(state, e)
    assert mon.tick() == []  # no roofline inputs yet: nothing to compare with
    apply(state, ev.GapComputed(floor_ms=8.3, ceiling_tps=120, bandwidth_gbs_total=H200_PEAK,
                                inputs={"weights_gb": 40.0, "gpus": 1}))
    (s,) = mon.tick()
    assert (s.verdict_kind, s.counter_quality) == ("", "ok") and s.measured_ms == pytest.approx(9.259, abs=0.001)
    assert mon.tick() == []  # the same counters reading is not recorded twice


def test_hosts_pane_dram_cell_na_and_stuck():
    from perftriage.core.analysis import counters as cnt
    from perftriage.core.model.reducer import apply
    from perftriage.core.model.state import SessionState
    from perftriage.ui.widgets.hosts import host_block

    state = SessionState()
    apply(state, ev.HostSample(host="h", gpus=[ev.GpuSample(index=0, name="NVIDIA H200"),
                                               ev.GpuSample(index=1, name="NVIDIA H200")]))
    assert "DRAM" not in host_block(state.hosts["h"], 0.0).plain  # no counter source: no column
    apply(state, ev.GpuCountersSample(host="h", source="unavailable", error="GPM not supported"))
    text = host_block(state.hosts["h"], 0.0).plain
    assert text.count("DRAM n/a") == 2 and "bandwidth counters: GPM not supported" in text
    stuck = cnt.make_counters(0, peak_gbs=H200_PEAK, dram_busy_pct=0)
    stuck.stuck = True
    apply(state, ev.GpuCountersSample(host="h", source="nvml-gpm", gpus=[
        stuck, cnt.make_counters(1, peak_gbs=H200_PEAK, dram_busy_pct=90)]))
    text = host_block(state.hosts["h"], 0.0).plain
    assert "DRAM 0? stuck" in text and "DRAM 4333GB/s 90%" in text


@pytest.mark.ssh
async def test_remote_pynvml_stream_over_ssh_no_dmon(sshd, tmp_path):
    from perftriage.transport.ssh import SSHTransport

    preamble, control, log = fake_env(tmp_path)
    transport = SSHTransport("loopback", sshd.alias, ssh_config=sshd.ssh_config,
                             preamble=with_fake_pynvml(preamble))
    sink = Sink()
    src = gr.RemoteGpmSource("loopback", transport, sink, peaks, min_interval_s=0.05)
    try:
        await run_until(src, lambda: len(sink.of(ev.GpuCountersSample)) >= 2, timeout=60)
    finally:
        await transport.close()
    e = sink.of(ev.GpuCountersSample)[-1]
    assert e.source == "nvml-gpm" and [g.dram_busy_pct for g in e.gpus] == [50, 51]
    assert e.gpus[0].peak_gbs == H200_PEAK and e.peak_source.startswith("nvml")  # bus width known
    assert e.gpus[1].nvlink_rx_gbs == pytest.approx(1024 * 1024 * 1024 / 1e9, abs=0.01)
    assert not log.exists()  # the host's pynvml answered: no nvidia-smi started


async def test_remote_pynvml_without_gpm_says_why(tmp_path):
    preamble, control, log = fake_env(tmp_path)
    sink = Sink()
    t = LocalTransport("box", with_fake_pynvml(preamble, "pre-hopper"))
    src = gr.RemoteGpmSource("box", t, sink, peaks, backoff_max_s=0.1, min_interval_s=0.05)
    await run_until(src, lambda: sink.of(ev.GpuCountersSample))
    (e,) = sink.of(ev.GpuCountersSample)
    assert e.source == "unavailable" and "pre-Hopper" in e.error and src.state == "down"
    assert not log.exists()  # not the dmon fallback: pynvml answered and said why
    await t.close()


def test_remote_command_quotes_the_python_path():
    cmd = gr.remote_command("/opt/my env/bin/python3")
    assert cmd.startswith("'/opt/my env/bin/python3' -u -c ")
    assert "exec nvidia-smi dmon --gpm-metrics 10,2,3,5 -d 1" in cmd
    assert gr.remote_command(None) == "exec nvidia-smi dmon --gpm-metrics 10,2,3,5 -d 1 2>&1"


@pytest.mark.parametrize("compact", [True, False], ids=["compact", "full"])
@pytest.mark.parametrize("width", [46, 60, 98])
def test_eight_gpus_with_counters_never_wrap_a_row(width, compact):
    """The demo at 100x30 (a 46-cell Hosts pane, eight GPUs, the compact
    form): each GPU row was 50 cells with its DRAM cell, so "42%" wrapped
    onto a line of its own. The DRAM cell takes the widest form that fits,
    down to its share alone."""
    from perftriage.core.analysis import counters as cnt
    from perftriage.core.model.reducer import apply
    from perftriage.core.model.state import SessionState
    from perftriage.ui.widgets.hosts import host_block

    state = SessionState()
    gpus = [ev.GpuSample(index=i, name="NVIDIA RTX PRO 6000 Blackwell Server Edition",
                         util_pct=50, mem_used_mib=91238, mem_total_mib=97887, power_w=389,
                         power_limit_w=600, temp_c=64) for i in range(8)]
    apply(state, ev.HostSample(host="localhost", gpus=gpus, cpu_pct=22.0))
    apply(state, ev.GpuCountersSample(host="localhost", source="nvml-gpm", gpus=[
        cnt.make_counters(i, peak_gbs=1792, dram_busy_pct=42) for i in range(8)]))
    block = host_block(state.hosts["localhost"], 0.0, width=width, max_gpus=5, compact=compact)
    rows = [line for line in block.plain.splitlines() if line.lstrip().startswith("GPU")]
    assert rows and all(len(r) <= width for r in rows), rows
    assert all("42%" in r for r in rows)  # the share stays, whatever else goes


async def test_gap_monitor_samples_at_once_when_the_gap_is_recorded():
    """CI's flake: G recorded the gap, and the triage a second later still
    asked for it (its first sample was a second away), so Enter in the Triage
    view opened the gap form again. The sample now follows the record at once,
    and a second record with new inputs is sampled again from the same counters."""
    from perftriage.core.analysis import counters as cnt
    from perftriage.services.investigation.session import Session
    from perftriage.services.sources.gap_monitor import gap_sources

    session = Session("gap", hosts=["h"])
    (mon,) = gap_sources(None, None, session)
    assert mon.interval >= 1.0
    session.emit(ev.GpuCountersSample(host="h", source="nvml-gpm", gpus=[
        cnt.make_counters(0, peak_gbs=H200_PEAK, dram_busy_pct=90)]))
    got: list[ev.GapSample] = []
    session.subscribe(lambda e: got.append(e) if isinstance(e, ev.GapSample) else None)
    for weights in (40.0, 20.0):
        session.emit(ev.GapComputed(floor_ms=8.3, ceiling_tps=120, bandwidth_gbs_total=H200_PEAK,
                                    measured_ms=9.0, inputs={"weights_gb": weights, "gpus": 1,
                                                             "measured_ms": 9.0}))
        await asyncio.sleep(0)  # one turn of the loop, far less than the monitor's second
        await asyncio.sleep(0)
    assert [s.host for s in got] == ["h", "h"]
    assert got[1].floor_ms == pytest.approx(got[0].floor_ms / 2, rel=0.01)  # the new inputs
