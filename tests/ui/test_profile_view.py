"""Captures in the investigation: the profile.captured event through the
reducer and a replayed transcript, trace files kept next to the transcript,
evidence, the report section, comparing two captures, and the Profile view
(P, palette, capture against the simulator, SVG snapshot)."""

from __future__ import annotations

import stat

import pytest
from pathlib import Path

from textual.widgets import DataTable, Static

from perftriage.ui.app import PerftriageApp
from perftriage.core.model import events as ev
from perftriage.core.profile.compare import compare
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.report.markdown import render
from perftriage.core.view.evidence import candidates
from perftriage.core.view.profile_view import bar_segments
from perftriage.ui.screens.profile import ProfileScreen, parse_capture_args
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry, local_host
from perftriage.services.investigation.session import Session
from tests.support.helpers import FIXTURES, app_opening, opened_then
from tests.support.helpers import wait_for
from tests.support.profile_replay import profile_view_of
from tests.support.sglang_profile_simulator import ProfilingServerSimulator

PROF = FIXTURES / "profile"
EAGER = [PROF / "eager-TP-0.trace.json.gz", PROF / "eager-TP-1.trace.json.gz"]
GRAPH = PROF / "graph-TP-0.trace.json.gz"


def _captured(cid: str, files: list[Path], engine: str = "sglang") -> ev.ProfileCaptured:
    return ev.ProfileCaptured(capture_id=cid, host="gpu-a", url="http://127.0.0.1:30000",
                              engine=engine, steps=5, summary=summarize_files(files))


async def test_capture_is_an_event_kept_next_to_the_transcript_and_replayed(tmp_path: Path):
    cockpit = Cockpit(registry=HostRegistry(), sessions_dir=tmp_path)
    cap = await cockpit.profiles.import_files(EAGER)
    assert cap.capture_id == "prof1" and cockpit.session.state.profiles == [cap]
    transcript = cockpit.session.path
    assert transcript is not None
    for f in cap.files:
        p = Path(f)
        assert p.parent.parent == transcript.with_name(transcript.name + ".profiles")
        assert stat.S_IMODE(p.stat().st_mode) == 0o600
    cockpit.session.close()
    raw = transcript.read_text()
    assert "profile.captured" in raw and "traceEvents" not in raw  # the summary, not the trace
    replayed, _ = Session.from_transcript(transcript)
    assert replayed.state.profiles == [cap]


def test_evidence_report_and_comparison() -> None:
    session = Session(name="t")
    session.emit(_captured("prof1", EAGER))
    session.emit(_captured("prof2", [GRAPH]))
    lines = [c for c in candidates(session.state).items if c.ref_kind == "profile"]
    assert [c.ref_id for c in lines][:4] == ["prof2", "prof2:k1", "prof2:k2", "prof2:k3"]
    assert lines[1].summary == ("prof2: other runs `at::native::(anon)::"
                                "indexSelectSmallIndex<…loat16, long, unsigned int, 2, 2, -2>`, 65 % of kernel time")
    assert "GPU idle 4 %" in lines[0].summary
    session.emit(ev.HypothesisAdded(hyp_id="h1", title="launch gaps dominate eager decode"))
    session.emit(ev.EvidenceLinked(hyp_id="h1", ref_kind="profile", ref_id="prof1",
                                   summary=next(c.summary for c in candidates(session.state).items
                                                if c.ref_id == "prof1")))
    md = render(session.state)
    assert "## Profiles" in md and "### prof2" in md and "`nvjet_sm90_tst_256x8_64x6_2x1_v_bz_NNT`" in md
    assert "GPU idle 84.9 %" in md and "GPU idle 3.7 %" in md
    # one call's p50/p99 and the launching op: an eager capture names the op, a graph replay not
    assert "| 94.1 | 93.9 / 98.2 | 65.0 % | `aten::index_select` |" in md
    assert "| 94.4 | 94.0 / 98.8 | 65.1 % | graph replay |" in md
    assert "- appeared: `memcpy32_post`" in md and "vanished: `Memcpy DtoD (Device -> Device)`" in md
    assert "prof1 (gpu-a): other 69 %" in md  # the evidence line under the hypothesis
    c = compare(session.state.profiles[0].summary, session.state.profiles[1].summary)
    assert [x.name for x in c.appeared] == ["memcpy32_post"]
    assert [x.name for x in c.vanished] == ["Memcpy DtoD (Device -> Device)"]
    assert c.idle_before is not None and c.idle_after is not None and c.idle_after < c.idle_before


def test_bar_cells_add_up_and_capture_args() -> None:
    s = summarize_files([GRAPH])
    segs = bar_segments(s, 80)
    assert sum(x.cells for x in segs) == 80 and segs[0].bucket == "other" and segs[0].cells == 55
    assert parse_capture_args("http://127.0.0.1:30000 5") == ("http://127.0.0.1:30000", 5)
    assert parse_capture_args("http://h:1 0") == ("http://h:1", None)
    for bad in ("", "ftp://x", "http://h:1 five", "a b c"):
        try:
            parse_capture_args(bad)
        except ValueError:
            continue
        raise AssertionError(bad)


async def test_p_opens_the_view_and_c_captures_from_the_server(tmp_path: Path) -> None:
    registry = HostRegistry()
    registry.add(local_host())
    cockpit = Cockpit(registry=registry, sessions_dir=tmp_path)
    cockpit.config.profile.timeout = 20
    app = PerftriageApp(cockpit)
    with ProfilingServerSimulator(tp_size=2) as sim:
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.press("P")
            await wait_for(lambda: isinstance(app.screen, ProfileScreen))
            assert "No capture yet" in str(app.screen.query_one("#profile-head").render())
            await pilot.press("c")
            await wait_for(lambda: app.screen.__class__.__name__ == "PromptScreen")
            inp = app.screen.query_one("Input")
            inp.value = f"{sim.url} 3"  # type: ignore[attr-defined]
            await pilot.press("enter")
            await wait_for(lambda: len(cockpit.session.state.profiles) == 1, timeout=30)
            screen = app.screen
            assert isinstance(screen, ProfileScreen)
            await wait_for(lambda: screen.query_one("#profile-kernels", DataTable).row_count > 5)
            assert "prof1" in screen.progress
            head = str(screen.query_one("#profile-head").render())
            assert "2 rank(s)" in head and "3 steps" in head
            await pilot.press("escape")
            await wait_for(lambda: not isinstance(app.screen, ProfileScreen))
    start = next(b for _, p, b in sim.requests if p == "/start_profile")
    assert start is not None and start["num_steps"] == 3


def _snapshot_app():
    cockpit = Cockpit(registry=HostRegistry())
    cockpit.session.emit(_captured("prof1", EAGER))
    cockpit.session.emit(_captured("prof2", [GRAPH]))
    return app_opening(cockpit, ProfileScreen)


def test_profile_view_snapshot(snap_compare):
    assert snap_compare(_snapshot_app(), terminal_size=(160, 45),
                        run_before=opened_then(ProfileScreen, "d"))


def test_kernel_detail_snapshot(snap_compare):
    """Enter on the eager capture's top kernel: whole name, bucket rule,
    one call's p50/p99, the op that launched it, per-rank totals."""
    from perftriage.ui.screens.profile import KernelDetailScreen

    async def open_detail(pilot) -> None:
        await wait_for(lambda: isinstance(pilot.app.screen, ProfileScreen))
        await pilot.press("left_square_bracket")  # prof1: eager, two ranks
        pilot.app.screen.query_one("#profile-kernels", DataTable).focus()
        await pilot.press("enter")
        await wait_for(lambda: isinstance(pilot.app.screen, KernelDetailScreen))
        await pilot.pause()

    assert snap_compare(_snapshot_app(), terminal_size=(160, 45), run_before=open_detail)


async def test_the_view_shows_a_replayed_capture_and_refuses_to_capture(tmp_path: Path):
    async with profile_view_of([GRAPH], tmp_path, (160, 45)) as (app, pilot, screen):
        assert screen.query_one("#profile-kernels", DataTable).row_count == 19
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ProfileScreen)  # no capture form in a replay


def test_the_capture_form_offers_the_engine_url_the_engine_view_reads() -> None:
    from perftriage.core.store.config import Config, HostConfig, ServerProfile

    config = Config(hosts=[HostConfig(name="localhost", metrics_url="http://127.0.0.1:31000/metrics")],
                    servers=[ServerProfile(name="s", command="x", host="other",
                                           metrics_url="http://127.0.0.1:8000/metrics")])
    registry = HostRegistry()
    registry.add(local_host(config.hosts[0]))
    cockpit = Cockpit(config, registry=registry)
    assert cockpit.profiles.default_url("localhost") == "http://127.0.0.1:31000"
    assert cockpit.profiles.default_url("nowhere") == "http://127.0.0.1:30000"


async def test_an_ncu_result_joins_the_kernels_with_their_bandwidth():
    """An ncu probe's result (the real H200 record) puts achieved GB/s and the
    share of the peak beside the profile's kernels it can name for certain."""
    import json

    record = json.loads((FIXTURES / "ncu" / "probe-ncu-moe-step.json").read_text())
    cockpit = Cockpit(registry=HostRegistry())
    cockpit.session.emit(_captured("prof1", EAGER))
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("P")
        await wait_for(lambda: isinstance(app.screen, ProfileScreen))
        table = app.screen.query_one("#profile-kernels", DataTable)
        labels = [str(c.label) for c in table.columns.values()]
        assert "GB/s" not in labels  # no ncu result yet: the table as before
        cockpit.session.emit(ev.ProbeQueued(probe_id="p1", host="gpu-a", kind="ncu",
                                            args=record["args"]))
        cockpit.session.emit(ev.ProbeFinished(probe_id="p1", status="ok", exit_status=0,
                                              summary="ncu", detail=record["detail"]))

        def columns() -> list[str]:
            return [str(c.label) for c in table.columns.values()]

        await wait_for(lambda: "GB/s" in columns())
        rows = [[str(x) for x in table.get_row_at(i)] for i in range(table.row_count)]
        gbs = columns().index("GB/s")
        sdpa = next(r for r in rows if "sdpa" in r[-1])
        topk = next(r for r in rows if "gatherTopK" in r[-1])
        assert float(sdpa[gbs]) > 3500 and sdpa[gbs + 1].endswith("%")  # near its roofline
        assert 0 < float(topk[gbs]) < 20  # joined by base name: sbtopk::gatherTopK
        index = next(r for r in rows if "indexSelectSmallIndex" in r[-1])
        assert index[gbs] == ""  # ncu never saw this kernel: nothing guessed


def test_profile_view_with_ncu_snapshot(snap_compare):
    """The kernels table with an ncu probe's result joined (GB/s, % of peak)."""
    import json

    record = json.loads((FIXTURES / "ncu" / "probe-ncu-moe-step.json").read_text())
    app = _snapshot_app()
    session = app.cockpit.session
    session.emit(ev.ProbeQueued(probe_id="p1", host="gpu-a", kind="ncu", args=record["args"]))
    session.emit(ev.ProbeFinished(probe_id="p1", status="ok", exit_status=0, summary="ncu",
                                  detail=record["detail"]))
    assert snap_compare(app, terminal_size=(160, 45))


async def test_keys_help_in_the_view_lists_its_keys_first_from_the_top():
    """`?` in the Profile view: the view's own keys first (they came last,
    after every global key), and the list opens at its top."""
    from textual.containers import VerticalScroll

    from perftriage.ui.screens.keys_help import KeysScreen

    app = _snapshot_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(lambda: isinstance(app.screen, ProfileScreen))
        await pilot.press("question_mark")
        await wait_for(lambda: isinstance(app.screen, KeysScreen))
        help_screen = app.screen
        title, rows = help_screen.sections[0]
        assert title == "Profile view"
        assert ("c", "Ask the running server for a new capture") in rows or \
            any(key == "c" for key, _ in rows)
        assert help_screen.sections[1][0] == "everywhere"
        await pilot.pause()
        assert help_screen.query_one(VerticalScroll).scroll_y == 0


async def _palette_import(app, pilot, action: str, path: Path) -> None:
    """Run a palette import action and answer its prompt with ``path``."""
    await pilot.pause()
    await app.run_action(action)
    await wait_for(lambda: app.screen.__class__.__name__ == "PromptScreen"
                   and bool(app.screen.query("Input")))
    app.screen.query_one("Input").value = str(path)
    await pilot.press("enter")


async def test_palette_import_brings_trace_files_into_the_investigation(tmp_path: Path):
    """`profile: import FILE…`: a glob of rank files becomes a capture of
    this session (copied next to the transcript) and the view opens on it."""
    from perftriage.ui.flows.profile_import import trace_paths

    cockpit = Cockpit(registry=HostRegistry(), sessions_dir=tmp_path)
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 45)) as pilot:
        await _palette_import(app, pilot, "profile_import", PROF / "eager-TP-*.trace.json.gz")
        await wait_for(lambda: isinstance(app.screen, ProfileScreen), timeout=30)
        (cap,) = cockpit.session.state.profiles
        assert cap.summary.ranks == 2 and all(Path(f).exists() for f in cap.files)
    assert trace_paths(f"{PROF}/eager-TP-0.trace.json.gz '{PROF}/graph-TP-0.trace.json.gz'") \
        == [EAGER[0], GRAPH]
    with pytest.raises(ValueError, match="no such file"):
        trace_paths(str(tmp_path / "missing.json.gz"))


async def test_palette_imports_an_ncu_csv_and_the_view_joins_it(tmp_path: Path):
    """`kernels: import CSV…` (issue 41 item 9): the real H200 ncu CSV becomes an
    ncu result of this session, and the Profile view joins its kernels with
    the capture's (achieved GB/s beside each)."""
    from perftriage.core.profile.ncu_join import latest_summary

    cockpit = Cockpit(registry=HostRegistry(), sessions_dir=tmp_path)
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 45)) as pilot:
        await _palette_import(app, pilot, "kernels_import", FIXTURES / "ncu" / "moe-step-eager.csv")
        await wait_for(lambda: latest_summary(cockpit.session.state.probes.values()) is not None,
                       timeout=30)
        [probe] = cockpit.session.state.probes.values()
        assert probe.kind == "ncu" and probe.status == "ok"
        assert probe.summary.startswith("imported: ")


async def test_enter_on_a_kernel_shows_it_whole():
    """Enter on a row: the whole name (the table cuts templates), the rule
    that chose its bucket, calls, and each rank's total with the spread."""
    from perftriage.ui.screens.profile import KernelDetailScreen

    app = _snapshot_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(lambda: isinstance(app.screen, ProfileScreen))
        await pilot.press("left_square_bracket")  # prof1: the eager capture, two ranks
        app.screen.query_one("#profile-kernels", DataTable).focus()
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, KernelDetailScreen))
        body = app.screen.body
        assert "indexSelectSmallIndex<" in body and "no rule matched: 'other'" in body
        assert "40 calls" in body and "TP-0" in body and "TP-1" in body and "spread" in body
        # one call's p50/p99 over both ranks, and the op that launched it
        assert "per call p50 93.92 µs, p99 98.24 µs (of 40 calls on all ranks)" in body
        assert "launched by aten::index_select via cudaLaunchKernel (40 of 40 calls)" in body
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, ProfileScreen))


@pytest.mark.parametrize("size", [(100, 30), (200, 50)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_comparison_and_the_kernel_names_fit_the_screen(size):
    """At 100x30 the comparison box was two columns wide (clipped) beside the
    buckets and ranks, and the kernel table scrolled sideways: now the
    comparison takes their place when all three do not fit, and each name is
    cut in its middle to the width left."""
    app = _snapshot_app()
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        screen = app.screen
        box = screen.query_one("#profile-compare", Static)
        assert not box.display  # d off: no room taken
        await pilot.press("d")
        await pilot.pause(0.3)
        assert box.display and box.region.right <= size[0]
        text = str(box.render())
        assert "prof2 against prof1" in text and "different rank counts" in text
        # each comparison line fits the box unwrapped
        assert all(len(line) <= box.content_region.width for line in text.splitlines())
        beside = screen.query_one("#profile-ranks-box").display
        assert beside == (size[0] >= 184)
        table = screen.query_one("#profile-kernels", DataTable)
        assert table.virtual_size.width <= table.scrollable_content_region.width
        names = [str(table.get_row_at(r)[-1]) for r in range(table.row_count)]
        assert len(set(names)) == len(names)
        await pilot.press("d")
        await pilot.pause(0.3)
        assert not box.display and screen.query_one("#profile-ranks-box").display
