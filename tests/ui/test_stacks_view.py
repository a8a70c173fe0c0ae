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
from tests.support.helpers import wait_for
from tests.support.stacks_support import result, text
from tests.support.stall_target import STALL_FUNCTION

SCHEDULER = "sglang::scheduler_TP0"


def emit_sample(session, probe_id: str, fixture: str, args: list[str]) -> None:
    v = STACKS_KIND.interpret(args, 0, result([{"pid": 4242, "name": SCHEDULER, "rc": 0,
                                                "out": text(fixture), "err": ""}]), "")
    session.emit(ev.ProbeQueued(probe_id=probe_id, host="gpu-a", kind="stacks", args=args))
    session.emit(ev.ProbeFinished(probe_id=probe_id, status=v.status, summary=v.summary,
                                  detail=v.detail))


def two_samples(session) -> None:
    emit_sample(session, "p1", "dump.json", [])
    emit_sample(session, "p2", "record-threads.raw", ["--seconds", "2"])


def test_compare_and_report_section() -> None:
    cockpit = Cockpit(registry=HostRegistry())
    two_samples(cockpit.session)
    (_, before), (_, after) = samples(cockpit.session.state)
    grew, shrank = compare(before, after)
    assert grew[0].name == STALL_FUNCTION and grew[0].before_pct == 0 and grew[0].after_pct > 80
    assert {c.name for c in shrank} >= {"Condition.wait"}
    md = render(cockpit.session.state)
    assert "## Stacks" in md and "### p2" in md
    assert f"| `{STALL_FUNCTION}` | tests/support/stall_target.py:27 | 87.5 % | 87.5 % |" in md
    assert f"- grew since p1: `{STALL_FUNCTION}` 0.0 → 87.5 %" in md


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
        await pilot.press("d")
        await wait_for(lambda: "p2 against p1" in str(side.render()))
        assert STALL_FUNCTION in str(side.render())
        await pilot.press("left_square_bracket")
        await wait_for(lambda: "[1/2] p1" in str(screen.query_one("#stacks-head", Static).render()))
        assert "nothing to compare with" in str(side.render())
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, StacksScreen))


def _snapshot_app():
    cockpit = Cockpit(registry=HostRegistry())
    two_samples(cockpit.session)

    class StacksApp(PerftriageApp):
        def on_mount(self) -> None:
            super().on_mount()
            self.call_later(lambda: self.push_screen(StacksScreen()))

    return StacksApp(cockpit)


def test_stacks_view_snapshot(snap_compare):
    assert snap_compare(_snapshot_app(), terminal_size=(160, 45), press=["enter"])


async def test_k_samples_a_real_process_from_the_cockpit(tmp_path) -> None:
    """k opens the stacks form; its answer goes to py-spy as arguments; the
    finished probe is in the Stacks view. An empty answer is a dump."""
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
            app.screen.query_one("Input").value = f"--match {tag} --seconds 1"  # type: ignore[attr-defined]
            await pilot.press("enter")
            await wait_for(lambda: any(p.kind == "stacks" and p.finished
                                       for p in state.probes.values()), timeout=30)
            (p,) = [p for p in state.probes.values() if p.kind == "stacks"]
            assert p.status == "ok" and p.detail["top"]["name"] == STALL_FUNCTION, p.summary
            await pilot.press("k")
            await wait_for(lambda: app.screen.__class__.__name__ == "PromptScreen")
            await pilot.press("enter")  # empty: a dump of the engine's processes
            await wait_for(lambda: len([q for q in state.probes.values()
                                        if q.kind == "stacks" and q.finished]) == 2, timeout=30)
            second = [q for q in state.probes.values() if q.kind == "stacks"][-1]
            assert second.args == [] and second.status in ("ok", "no-match")
            await pilot.press("T")
            await wait_for(lambda: isinstance(app.screen, StacksScreen))
            head = str(app.screen.query_one("#stacks-head", Static).render())
            assert STALL_FUNCTION in head or "dump" in head
