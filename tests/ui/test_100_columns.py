"""The Hosts pane at 100x30 with the demo's eight SIMULATED GPUs on
localhost (they showed at 120 columns and vanished at 100,
with no "+N more"): every GPU has its row, or as many as fit and "+N more";
no line of the pane wraps. Also at 100x30: the Triage view's header is one
line, the gap form (G) folds GPUs that agree and scrolls to its bottom. Deterministic: a transcript replayed, so the
snapshot holds still.

Update the snapshot after an intended change with ``--snapshot-update`` and
look at the SVG before committing it."""

from __future__ import annotations

import json

import msgspec
import pytest
from textual.widgets import Static

from perftriage.core.model import events as ev
from perftriage.simulator.scenarios import GPU_COUNT, GPU_NAME, PEAK_GBS
from perftriage.ui.widgets.hosts import HostsPane
from tests.support.event_samples import HEADER
from tests.support.helpers import replay_app


def demo_events(counters_error: bool) -> list[dict]:
    gpus = [ev.GpuSample(index=i, name=GPU_NAME, uuid=f"GPU-SIM-{i}", util_pct=97.0 + i % 3,
                         mem_used_mib=91238.0, mem_total_mib=98304.0, power_w=412.0 + i,
                         power_limit_w=600.0, temp_c=61.0, sm_clock_mhz=2430.0,
                         sm_clock_max_mhz=2430.0, mem_clock_max_mhz=14000.0,
                         bus_width_bits=512, bandwidth_gbs=PEAK_GBS)
            for i in range(GPU_COUNT)]
    out: list[ev.Event] = [ev.HostStatus(host="localhost", state="up", t=0.0)]
    for t in range(1, 6):
        out.append(ev.HostSample(host="localhost", cpu_pct=73.5, per_cpu_pct=[70.0, 77.0],
                                 mem_used_bytes=int(0.9 * 2**30),
                                 mem_total_bytes=int(23.5 * 2**30), load1=1.25, gpus=gpus,
                                 t=float(t)))
        out.append(ev.GpuCountersSample(
            host="localhost", source="nvml-gpm", t=t + 0.5,
            error="GPM sample 3 of 8 GPUs late (simulated)" if counters_error else None,
            gpus=[ev.GpuCounters(index=g.index, dram_busy_pct=49.0, peak_gbs=PEAK_GBS,
                                 dram_bw_gbs=0.49 * PEAK_GBS, sm_active_pct=90.0)
                  for g in gpus]))
    return [msgspec.to_builtins(e) for e in out]


def _app(tmp_path, counters_error: bool = False):
    path = tmp_path / "demo-gpus.jsonl"
    lines = [{**HEADER, "hosts": ["localhost"]}, *demo_events(counters_error)]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return replay_app(path)


def test_the_demo_s_eight_gpus_at_100x30_snapshot(snap_compare, tmp_path):
    assert snap_compare(_app(tmp_path), terminal_size=(100, 30))


@pytest.mark.parametrize("counters_error", [False, True])
async def test_at_100x30_each_gpu_has_a_row_or_is_counted(tmp_path, counters_error):
    app = _app(tmp_path, counters_error)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(1.0)
        pane = app.screen.query_one(HostsPane)
        body = pane.query_one("#hosts-body", Static)
        lines = str(body.render()).splitlines()
        rows = [line for line in lines if line.lstrip().startswith("GPU")]
        more = [line for line in lines if "more" in line]
        shown = int(more[0].split("+")[1].split()[0]) if more else 0
        assert rows and len(rows) + shown == GPU_COUNT, lines
        # nothing wraps and nothing is below the pane's bottom: what is there is seen
        assert all(len(line) <= body.size.width for line in lines), lines
        assert len(lines) <= pane.size.height, lines
        await pilot.press("q")


async def test_the_triage_header_is_one_line_at_100_columns(tmp_path):
    """Two hosts, one of them on a new server process: the header's hint
    shortens instead of wrapping onto a second line."""
    from perftriage.ui.app import PerftriageApp
    from perftriage.ui.screens.triage import TriageScreen
    from tests.core.test_triage_real import EAGER, GRAPH
    from tests.support.helpers import wait_for
    from tests.ui.test_triage_ui import RESOLVED, live_cockpit, triage_event

    cockpit = live_cockpit(tmp_path)
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(100, 30)) as pilot:
        cockpit.session.emit(ev.ServerEvent(server="s", host="gpu2", state="starting", t=1.0))
        cockpit.session.emit(triage_event("gpu2", GRAPH, t=70.0, earlier=RESOLVED))
        cockpit.session.emit(triage_event("localhost", EAGER, t=70.0))
        await pilot.press("Y")
        await wait_for(lambda: isinstance(app.screen, TriageScreen))
        await pilot.pause(0.3)
        head = app.screen.query_one("#triage-head", Static)
        text = str(head.render())
        assert "gpu2" in text and "localhost" in text and "⏎" in text
        assert head.size.height == 1 and len(text) <= 100, text
        # its server gone: the header says so, shorter, still on one line
        cockpit.session.emit(ev.ServerEvent(server="sglang-sim", host="gpu2", state="exited",
                                            detail="ended", t=80.0))
        cockpit.session.emit(triage_event("gpu2", GRAPH, t=81.0, earlier=RESOLVED))
        await pilot.pause(0.5)
        text = str(head.render())
        assert "server sglang-sim exited (ended) at " in text, text
        assert head.size.height == 1 and len(text) <= 100, text
        await pilot.press("escape")


async def test_the_gap_form_folds_agreeing_gpus_and_scrolls_to_its_bottom(tmp_path):
    """At 100x30 with eight GPUs the G form's result was below the screen:
    GPUs that agree are one line, and the form scrolls to what is left."""
    from textual.containers import VerticalScroll

    from perftriage.ui.screens.roofline import RooflineScreen
    from tests.support.helpers import wait_for

    app = _app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.5)
        app.push_screen(RooflineScreen(app.cockpit.session.state, read_only=True))
        await wait_for(lambda: isinstance(app.screen, RooflineScreen))
        await pilot.pause(0.3)
        text = str(app.screen.query_one("#gap-live", Static).render())
        assert "GPU0–7 DRAM" in text and "8 GPUs alike" in text and "GPU3 DRAM" not in text
        box = app.screen.query_one(VerticalScroll)
        assert box.outer_size.height <= 30
        box.scroll_end(animate=False)
        await pilot.pause(0.2)
        result = app.screen.query_one("#roofline-result", Static)
        assert box.scroll_offset.y + box.size.height >= result.virtual_region.bottom
        await pilot.press("escape")
