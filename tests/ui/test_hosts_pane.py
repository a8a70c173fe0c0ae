"""Hosts pane and host detail view (Pilot), plus the pure block renderer."""

from __future__ import annotations

from tests.support.helpers import wait_for
from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState

from textual.widgets import Static


def two_gpu_sample(host: str = "gpubox", **kw) -> ev.HostSample:
    gpus = [
        ev.GpuSample(index=i, name="NVIDIA H200", uuid=f"GPU-{i}", util_pct=util,
                     mem_used_mib=31731.0, mem_total_mib=143771.0, power_w=pw,
                     power_limit_w=700.0, temp_c=55.0, sm_clock_mhz=1500.0,
                     sm_clock_max_mhz=1980.0, mem_clock_mhz=3201.0, mem_clock_max_mhz=3201.0,
                     pstate="P0", throttle=["sw_power_cap"] if i else [],
                     processes=[ev.GpuProcess(pid=430, name="python3", used_mib=31722.0)],
                     bus_width_bits=6016, bandwidth_gbs=4814.4)
        for i, (util, pw) in enumerate([(100.0, 690.6), (3.0, 128.0)])
    ]
    return ev.HostSample(host=host, cpu_pct=12.5, per_cpu_pct=[10.0, 15.0],
                         mem_used_bytes=8 * 2**30, mem_total_bytes=64 * 2**30, load1=1.25,
                         gpus=gpus, **kw)


def make_app(tmp_path):
    from perftriage.ui.app import PerftriageApp
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts.registry import HostRegistry

    cockpit = Cockpit(registry=HostRegistry(), sessions_dir=tmp_path)
    return PerftriageApp(cockpit)


def body_text(app) -> str:
    return str(app.screen.query_one("#hosts-body", Static).render())


async def test_two_gpus_render_two_rows(tmp_path):
    app = make_app(tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        app.session.emit(ev.HostStatus(host="gpubox", state="up"))
        app.session.emit(two_gpu_sample())
        await wait_for(lambda: "GPU1" in body_text(app))
        await pilot.pause()
        text = body_text(app)
        gpu_rows = [l for l in text.splitlines() if l.lstrip().startswith("GPU")]
        assert len(gpu_rows) == 2
        assert "31.0/140G" in gpu_rows[0] and "691/700W" in gpu_rows[0]
        assert "100%" in gpu_rows[0] and "1500MHz" in gpu_rows[0]
        assert "cores" in text  # wide enough for the per-core line
        # p: the power sparkline joins the utilisation one
        await pilot.press("p")
        await pilot.pause()
        assert all(" P" in l for l in body_text(app).splitlines() if l.lstrip().startswith("GPU"))
        # D: the detail view with processes and the topology matrix
        app.session.emit(ev.HostInfo(host="gpubox", info={
            "topo": {"columns": ["GPU0", "GPU1"], "rows": [["GPU0", "X", "NV18"],
                                                           ["GPU1", "NV18", "X"]]}}))
        await pilot.press("D")
        await pilot.pause()
        detail = str(app.screen.query_one("#host-detail-body", Static).render())
        assert "pid      430" in detail and "python3" in detail
        assert "clocks held by: sw_power_cap" in detail
        assert "NV18" in detail and "peak 4.81 TB/s" in detail
        await pilot.press("escape")
        await app.cockpit.stop()


def test_stale_host_and_stale_gpus_are_marked():
    from perftriage.ui.widgets.hosts import host_block

    state = SessionState()
    s = two_gpu_sample()
    s.t = 10.0
    apply(state, s)
    hs = state.hosts["gpubox"]
    fresh = host_block(hs, now_t=11.0).plain
    assert "stale" not in fresh and "GPU0" in fresh
    old = host_block(hs, now_t=40.0).plain
    assert "stale 30s" in old
    g = two_gpu_sample(gpu_error="nvidia-smi: no samples for 7s", gpu_age_s=7.0)
    g.t = 12.0
    apply(state, g)
    text = host_block(state.hosts["gpubox"], now_t=12.5).plain
    assert "GPU readings stale 7s" in text
    # stale readings do not pad the history
    assert len(state.hosts["gpubox"].util_history[0]) == 1


def test_no_gpu_message_and_na_fields():
    from perftriage.ui.widgets.hosts import host_block

    state = SessionState()
    apply(state, ev.HostSample(host="cpu-only", cpu_pct=5.0, gpu_error="no NVIDIA GPU (NVML: x)"))
    assert "no NVIDIA GPU" in host_block(state.hosts["cpu-only"], 0.0).plain
    apply(state, ev.HostSample(host="na", gpus=[ev.GpuSample(index=0)]))
    text = host_block(state.hosts["na"], 0.0).plain
    assert "n/a/n/aMiB" in text and "n/a/n/aW" in text


def test_a_host_without_gpus_is_one_line_in_every_layout_and_the_detail_says_why():
    from perftriage.ui.screens.host_detail import host_detail_text
    from perftriage.ui.widgets.hosts import host_block

    state = SessionState()
    apply(state, ev.HostSample(host="localhost", cpu_pct=57.0, per_cpu_pct=[4.0, 6.0],
                               mem_used_bytes=int(1.2 * 2**30), mem_total_bytes=int(23.5 * 2**30),
                               load1=1.76,
                               gpu_error="no NVIDIA GPU (NVML: NVML Shared Library Not Found)"))
    apply(state, ev.GpuCountersSample(host="localhost", source="unavailable",
                                      error="NVML GPM: no GPU"))
    hs = state.hosts["localhost"]
    for width in (46, 48, 80, 100, 140, 200):
        for compact in (False, True):
            # selected: the "▶ " marker too (the demo at 100x30: 46 cells, and the
            # line was 49, so its load wrapped onto a line of its own)
            text = host_block(hs, 0.0, width=width, compact=compact, selected=True).plain
            assert "\n" not in text and len(text) <= width, (width, compact, text)
            assert "CPU" in text and (width < 48 or "RAM" in text)
            assert "Shared Library" not in text and "bandwidth counters" not in text
    assert "no NVIDIA GPU" in host_block(hs, 0.0, width=140).plain
    assert "no GPU" in host_block(hs, 0.0, width=60).plain
    detail = host_detail_text(hs).plain
    assert "no NVIDIA GPU (NVML: NVML Shared Library Not Found)" in detail
    assert "bandwidth counters: NVML GPM: no GPU" in detail


async def test_config_can_show_power_history_from_the_start(tmp_path):
    from perftriage.ui.app import PerftriageApp
    from perftriage.core.store.config import parse
    from perftriage.services.cockpit import Cockpit
    from perftriage.ui.widgets.hosts import HostsPane

    config = parse("[ui]\nshow_power_history = true\n")
    app = PerftriageApp(Cockpit(config, sessions_dir=tmp_path, sample_interval=0.2))
    async with app.run_test(size=(140, 40)) as pilot:
        assert app.screen.query_one(HostsPane).show_power
        await pilot.press("q")
