"""The Stacks view (T, palette): top frames per process, Enter shows a frame's
full stack, d compares with the sample before, [ ] step; the report's Stacks
section; all on real py-spy output (tests/fixtures/stacks)."""

from __future__ import annotations

from textual.widgets import DataTable, Static

from perftriage.core.model import events as ev
from perftriage.core.probe_kinds.stacks_kind import STACKS_KIND
from perftriage.core.report.markdown import render
from perftriage.core.stacks.compare import compare
from perftriage.core.stacks.samples import samples
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry
from perftriage.ui.app import PerftriageApp
from perftriage.ui.screens.stacks import StacksScreen
from tests.support.helpers import app_opening, opened_then, wait_for
from tests.support.stacks_support import result, text
from tests.support.stall_target import STALL_FUNCTION

SCHEDULER = "sglang::scheduler_TP0"
LONG_COMMAND = ("/opt/venv/bin/python3 -m tests.support.sglang_sim --random-seed 7 "
                "--port 30000 --tp-size 2 --model-path /models/llama")


def emit_sample(session, probe_id: str, fixture: str, args: list[str],
                name: str = SCHEDULER) -> None:
    v = STACKS_KIND.interpret(args, 0, result([{"pid": 4242, "name": name, "rc": 0,
                                                "out": text(fixture), "err": ""}]), "")
    session.emit(ev.ProbeQueued(probe_id=probe_id, host="gpu-a", kind="stacks", args=args))
    session.emit(ev.ProbeFinished(probe_id=probe_id, status=v.status, summary=v.summary,
                                  detail=v.detail))


def two_samples(session) -> None:
    emit_sample(session, "p1", "dump.json", [])
    emit_sample(session, "p2", "record-threads.raw", ["--seconds", "2"])


def four_samples(session) -> None:
    """A dump, a record, a --gil record, a record: only the two records compare."""
    two_samples(session)
    emit_sample(session, "p3", "record-gil.raw", ["--seconds", "2", "--gil"])
    emit_sample(session, "p4", "record-plain.raw", ["--seconds", "2"], name=LONG_COMMAND)


def test_compare_and_report_section() -> None:
    cockpit = Cockpit(registry=HostRegistry())
    four_samples(cockpit.session)
    (_, before), (_, after), _, (_, plain) = samples(cockpit.session.state)
    grew, shrank = compare(before, after)
    assert grew[0].name == STALL_FUNCTION and grew[0].before_pct == 0 and grew[0].after_pct > 80
    assert {c.name for c in shrank} >= {"Condition.wait"}
    md = render(cockpit.session.state)
    assert "## Stacks" in md and "### p2" in md
    assert f"| `{STALL_FUNCTION}` | tests/support/stall_target.py:27 | 87.5 % | 87.5 % |" in md
    # p1, a dump of two threads, is too few samples to show or compare with
    assert "p1: 2 samples, not shown (fewer than 5 samples" in md
    assert "### p1" not in md and "not compared with p1" not in md
    # a --gil record and a plain record are different kinds: not compared
    assert "- not compared with p2: a record, this a record --gil" in md
    assert "since p1" not in md and "since p3" not in md
    # p4 against p2, both records: 87.5 → 83.9 % of 160 and 87 samples is noise
    assert "- since p2: no function moved past the noise floor (87 against 160 samples)" in md
    # a long command line is cut at a word, with an ellipsis
    assert "pid 4242 /opt/venv/bin/python3 -m tests.support.sglang_sim --random-seed 7 --port 30000 …: 87 samples" in md


async def test_t_opens_the_view_enter_shows_the_stack_and_d_compares() -> None:
    cockpit = Cockpit(registry=HostRegistry())
    two_samples(cockpit.session)
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("T")
        await wait_for(lambda: isinstance(app.screen, StacksScreen))
        screen = app.screen
        table = screen.query_one("#stacks-frames", DataTable)
        await wait_for(lambda: table.row_count > 3)
        assert "[2/2] p2 on gpu-a · record 2 s at 100 Hz" in str(
            screen.query_one("#stacks-head", Static).render())
        table.focus()
        await pilot.press("enter")  # the first row: the planted stall
        side = screen.query_one("#stacks-side", Static)
        await wait_for(lambda: "root first" in str(side.render()))
        shown = str(side.render())
        assert "_run_module_as_main" in shown and STALL_FUNCTION in shown.splitlines()[-1]
        await pilot.press("d")  # p2 is a record, p1 a dump: not like for like
        await wait_for(lambda: "different kinds of sample" in str(side.render()))
        assert "p2 is a record, p1 a dump" in str(side.render())
        assert STALL_FUNCTION not in str(side.render())
        await pilot.press("left_square_bracket")
        await wait_for(lambda: "[1/2] p1" in str(screen.query_one("#stacks-head", Static).render()))
        assert "nothing to compare with" in str(side.render())
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, StacksScreen))


def _snapshot_app():
    cockpit = Cockpit(registry=HostRegistry())
    two_samples(cockpit.session)
    return app_opening(cockpit, StacksScreen)


def _frames_then_enter():
    """Enter on the top frame once the view's table has its rows."""
    return opened_then(StacksScreen, "enter",
                       ready=lambda s: s.query_one("#stacks-frames", DataTable).row_count > 0)


def test_stacks_view_snapshot(snap_compare):
    assert snap_compare(_snapshot_app(), terminal_size=(160, 45), run_before=_frames_then_enter())


async def test_k_samples_a_real_process_from_the_cockpit(tmp_path) -> None:
    """k opens the stacks form; its answer goes to py-spy as arguments; the
    finished probe is in the Stacks view. The form offers a short record
    (``--seconds 3``: one dump is a sample per thread); ``--dump`` is one."""
    import sys

    from perftriage.core.store.config import HostConfig
    from perftriage.services.hosts.registry import local_host
    from tests.support.stall_target import running

    registry = HostRegistry()
    registry.add(local_host(HostConfig(name="localhost", python=sys.executable)))
    cockpit = Cockpit(registry=registry, sessions_dir=tmp_path)
    app = PerftriageApp(cockpit)
    state = cockpit.session.state
    with running() as (_proc, tag):
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.press("k")
            await wait_for(lambda: app.screen.__class__.__name__ == "PromptScreen")
            form = app.screen.query_one("Input")
            assert form.value == "--seconds 3"  # type: ignore[attr-defined]
            form.value = f"--match {tag} --seconds 1"  # type: ignore[attr-defined]
            await pilot.press("enter")
            await wait_for(lambda: any(p.kind == "stacks" and p.finished
                                       for p in state.probes.values()), timeout=30)
            (p,) = [p for p in state.probes.values() if p.kind == "stacks"]
            assert p.status == "ok" and p.detail["top"]["name"] == STALL_FUNCTION, p.summary
            await pilot.press("k")
            await wait_for(lambda: app.screen.__class__.__name__ == "PromptScreen")
            app.screen.query_one("Input").value = "--dump"  # type: ignore[attr-defined]
            await pilot.press("enter")  # one word away: a dump of the engine's processes
            await wait_for(lambda: len([q for q in state.probes.values()
                                        if q.kind == "stacks" and q.finished]) == 2, timeout=30)
            second = [q for q in state.probes.values() if q.kind == "stacks"][-1]
            assert second.args == ["--dump"] and second.status in ("ok", "no-match")
            await pilot.press("T")
            await wait_for(lambda: isinstance(app.screen, StacksScreen))
            head = str(app.screen.query_one("#stacks-head", Static).render())
            assert STALL_FUNCTION in head or "dump" in head


def _app_with(emit) -> PerftriageApp:
    cockpit = Cockpit(registry=HostRegistry())
    emit(cockpit.session)
    return PerftriageApp(cockpit)


async def _open_view(app: PerftriageApp, pilot) -> StacksScreen:
    await pilot.press("T")
    await wait_for(lambda: isinstance(app.screen, StacksScreen))
    assert isinstance(app.screen, StacksScreen)
    return app.screen


async def test_d_compares_like_with_like() -> None:
    app = _app_with(four_samples)
    async with app.run_test(size=(160, 45)) as pilot:
        side = (await _open_view(app, pilot)).query_one("#stacks-side", Static)
        await pilot.press("d")  # p4, a record: against p2, not the --gil p3 before it
        await wait_for(lambda: "p4 against p2, both record" in str(side.render()))
        await pilot.press("left_square_bracket")  # p3, the only --gil record
        await wait_for(lambda: "p3 is a record --gil, p2 a record" in str(side.render()))


async def test_where_keeps_file_and_line_at_100_columns() -> None:
    app = _app_with(two_samples)
    async with app.run_test(size=(100, 45)) as pilot:
        table = (await _open_view(app, pilot)).query_one("#stacks-frames", DataTable)
        await wait_for(lambda: table.row_count > 3)
        await pilot.pause()
        cells = [str(c) for c in table.get_row_at(0)]
        assert cells[5].endswith("stall_target.py:27")
        widths = sum(c.get_render_width(table) for c in table.columns.values())
        assert widths <= table.size.width  # the where column is on screen, not scrolled off


async def test_at_100x30_the_frame_column_shows_the_planted_frame_whole():
    """At 100x30 the frame column was 12 characters ("simul…_stall") beside a
    help box a third of the screen wide: the help goes below the table, the
    table takes the whole width, and the planted frame's name shows whole
    beside its file and line."""
    app = _snapshot_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.5)
        screen = app.screen
        table = screen.query_one("#stacks-frames", DataTable)
        await wait_for(lambda: table.row_count > 3)
        row = next(r for r in range(table.row_count)
                   if str(table.get_row_at(r)[4]) == STALL_FUNCTION)
        assert str(table.get_row_at(row)[5]).endswith("stall_target.py:27")
        side = screen.query_one("#stacks-side", Static)
        assert side.region.y >= table.region.bottom  # the help is below, not beside
        widths = sum(c.get_render_width(table) for c in table.columns.values())
        assert widths <= table.size.width  # nothing scrolled off to the right


async def test_at_80_columns_a_frame_name_is_cut_in_its_middle():
    """A narrow table kept a frame name's first 12 characters
    ("perftriage_p"): two frames of one prefix read alike. Both ends stay."""
    app = _snapshot_app()
    async with app.run_test(size=(80, 30)) as pilot:
        await pilot.pause(0.5)
        table = app.screen.query_one("#stacks-frames", DataTable)
        frames = [str(table.get_row_at(r)[4]) for r in range(table.row_count)]
        stall = next(f for f in frames if f.startswith("perf"))
        assert "…" in stall and stall.endswith(STALL_FUNCTION[-4:])
        assert len(stall) < len(STALL_FUNCTION)


def test_stacks_view_at_100x30_snapshot(snap_compare):
    assert snap_compare(_snapshot_app(), terminal_size=(100, 30), run_before=_frames_then_enter())


async def test_the_view_says_when_a_sample_is_too_few_to_say_anything():
    """The report leaves out a sample of fewer than 5 samples; the view
    shows it (it is what was taken) and says, as the report does, that its
    shares say nothing, and that k takes a record."""
    app = _snapshot_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0.3)
        head = lambda: str(app.screen.query_one("#stacks-head", Static).render())  # noqa: E731
        assert "[2/2] p2" in head() and "too few" not in head()  # a record of 160 samples
        await pilot.press("left_square_bracket")
        await wait_for(lambda: "[1/2] p1" in head())
        assert "only 2 samples: too few for a share to say anything (fewer than 5)" in head()


async def test_k_offers_the_server_behind_the_engine_url(tmp_path) -> None:
    """With an engine URL on the host, k (main screen and Stacks view) offers
    the tree of the process on its port, and ⏎ samples that server, not the
    busier SGLang-named decoy beside it (issue 49 item 1)."""
    import sys

    import pytest

    from perftriage.core.store.config import Config, HostConfig
    from perftriage.core.probe_kinds.stacks_kind import own_pyspy
    from perftriage.services.hosts.registry import local_host
    from tests.support.two_servers import SERVER_STALL, running

    if own_pyspy() is None:
        pytest.skip("py-spy is not installed")
    with running() as two:
        host = HostConfig(name="localhost", python=sys.executable,
                          metrics_url=f"http://127.0.0.1:{two.port}/metrics")
        registry = HostRegistry()
        registry.add(local_host(host))
        cockpit = Cockpit(config=Config(hosts=[host]), registry=registry, sessions_dir=tmp_path)
        app = PerftriageApp(cockpit)
        state = cockpit.session.state
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.press("T")
            await wait_for(lambda: isinstance(app.screen, StacksScreen))
            await pilot.press("k")
            await wait_for(lambda: app.screen.__class__.__name__ == "PromptScreen")
            form = app.screen.query_one("Input")
            assert form.value == f"--seconds 3 --port {two.port}"  # type: ignore[attr-defined]
            help_text = " ".join(str(s.render()) for s in app.screen.query(Static))
            assert f"the process on port {two.port} and its children" in help_text
            await pilot.press("enter")
            await wait_for(lambda: any(p.kind == "stacks" and p.finished
                                       for p in state.probes.values()), timeout=30)
            (p,) = [p for p in state.probes.values() if p.kind == "stacks"]
            assert p.status == "ok", p.summary
            assert {q["pid"] for q in p.detail["processes"]} == {two.server, two.child}
            assert p.detail["top"]["name"] == SERVER_STALL


async def test_after_py_spy_was_not_found_k_offers_to_carry_it(tmp_path) -> None:
    """A stacks probe that found no py-spy on the host says --carry carries
    perftriage's own; the next k on that host starts with --carry, and says
    why (issue 51 item 3)."""
    import sys

    import pytest

    from perftriage.core.probe_kinds.stacks_kind import own_pyspy
    from perftriage.core.store.config import HostConfig
    from perftriage.services.hosts.registry import local_host

    if own_pyspy() is None:
        pytest.skip("py-spy is not installed")
    registry = HostRegistry()
    registry.add(local_host(HostConfig(name="localhost", python=sys.executable)))
    cockpit = Cockpit(registry=registry, sessions_dir=tmp_path)
    out = result([{"pid": 4242, "name": SCHEDULER}], pyspy=None, tried=["/usr/bin/py-spy"])
    v = STACKS_KIND.interpret(["--seconds", "3"], 1, out, "")
    assert v.status == "failed" and "--carry carries perftriage's own" in v.summary
    cockpit.session.emit(ev.ProbeQueued(probe_id="p1", host="localhost", kind="stacks",
                                        args=["--seconds", "3"]))
    cockpit.session.emit(ev.ProbeFinished(probe_id="p1", status=v.status, summary=v.summary,
                                          detail=v.detail))
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("k")
        await wait_for(lambda: app.screen.__class__.__name__ == "PromptScreen")
        form = app.screen.query_one("Input")
        assert form.value == "--seconds 3 --carry"  # type: ignore[attr-defined]
        help_text = " ".join(str(s.render()) for s in app.screen.query(Static))
        assert "py-spy was not found there: --carry carries perftriage's own" in help_text


async def test_the_columns_fit_their_cells_before_the_table_is_idle():
    """CI-like load (and once a real demo) drew the view between the rows
    going in and the table's idle pass that measures them: every cell stayed
    cut to its column label's width ('recv_', '358' for pid 3582) until the
    cursor moved. The widths are set with the rows, not on idle."""
    from rich.cells import cell_len

    app = _snapshot_app()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0.3)
        screen = app.screen
        table = screen.query_one("#stacks-frames", DataTable)
        screen.show_state(app.session.state)  # refilled: no idle pass yet
        assert table.row_count > 3
        for i, column in enumerate(table.ordered_columns):
            widest = max(cell_len(str(table.get_row_at(r)[i])) for r in range(table.row_count))
            assert column.content_width >= widest, column.label
