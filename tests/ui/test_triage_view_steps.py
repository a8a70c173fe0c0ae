"""Issue 49.5: the Triage view tells what happened to a finding's next step
(a failure with its error and what to do, not "queued" while the failure
sits in the Probes pane), never starts a second copy, and Enter acts on the
top finding unless the user moved the highlight, which then stays on the
same cause across refreshes."""

from __future__ import annotations

import contextlib

import msgspec

from textual.widgets import DataTable, Static

from perftriage.core.model import events as ev
from perftriage.core.profile.summarize import summarize_files
from perftriage.ui.app import PerftriageApp
from perftriage.ui.screens.triage import TriageScreen
from tests.core.test_triage_real import EAGER
from tests.support.helpers import wait_for
from tests.ui.test_triage_ui import derive, live_cockpit

PYSPY_MISSING = ("py-spy not found on gpu2: install it in the server's venv "
                 "(pip install py-spy)")


def queue_as_events(cockpit) -> list[tuple[str, str, list[str]]]:
    """probes.enqueue that records the probe in the session (as the runner does)
    and runs nothing."""
    queued: list[tuple[str, str, list[str]]] = []

    def enqueue(host, kind, args, **_):
        queued.append((host, kind, list(args)))
        probe_id = f"p{len(queued)}"
        cockpit.session.emit(ev.ProbeQueued(probe_id=probe_id, host=host, kind=kind,
                                            args=list(args)))
        return probe_id

    cockpit.probes.enqueue = enqueue  # type: ignore[method-assign]
    return queued


def detail(screen) -> str:
    return str(screen.query_one("#triage-detail", Static).render())


@contextlib.asynccontextmanager
async def triage_view(cockpit, host: str = "gpu2", trace=EAGER):
    """``cockpit``'s app whose live triage read ``host``'s capture of
    ``trace``, the Triage view (``Y``) open on its findings: (app, pilot, view)."""
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 45)) as pilot:
        derive(cockpit, (10.0, ev.ProfileCaptured(capture_id="prof1", host=host,
                                                  summary=summarize_files(trace))))
        await pilot.press("Y")
        await wait_for(lambda: isinstance(app.screen, TriageScreen))
        screen = app.screen
        await wait_for(lambda: screen.query_one("#triage-findings", DataTable).row_count > 0)
        yield app, pilot, screen


async def test_a_failed_step_says_its_error_and_what_to_do_and_is_never_run_twice(tmp_path):
    cockpit = live_cockpit(tmp_path)
    queued = queue_as_events(cockpit)
    async with triage_view(cockpit) as (app, pilot, screen):
        assert screen._rows[0][1].next.kind == "stacks"
        await pilot.press("enter")
        await wait_for(lambda: "last step: stacks p1 queued on gpu2 since" in detail(screen))
        await pilot.press("enter")  # while it waits: said, not queued again
        await pilot.pause()
        assert len(queued) == 1
        cockpit.session.emit(ev.ProbeFinished(probe_id="p1", status="error",
                                              summary=PYSPY_MISSING))
        await wait_for(lambda: "stacks p1 error: py-spy not found" in detail(screen))
        text = detail(screen)
        assert "what to do: install py-spy where the server runs" in text
        assert "queued" not in text.split("last step:")[1]


async def test_enter_acts_on_the_top_finding_until_the_highlight_is_moved(tmp_path):
    cockpit = live_cockpit(tmp_path)
    queue_as_events(cockpit)
    async with triage_view(cockpit) as (app, pilot, screen):
        table = screen.query_one("#triage-findings", DataTable)
        told = cockpit.session.state.triage["gpu2"]
        lb = told.findings[0]
        ranked = [lb, msgspec.structs.replace(lb, cause="host-sync", explains_pct=20.0)]
        swapped = ranked[::-1]
        cockpit.session.emit(ev.TriageUpdated(host="gpu2", start=told.start, end=told.end + 0.5,
                                              findings=ranked, earlier=[]))
        await wait_for(lambda: len(screen._rows) == 2)
        top, second = "launch-bound", "host-sync"
        assert screen.selected == ("gpu2", top)
        # the findings re-ranked (the second cause now first): not moved, the highlight
        # follows the top
        cockpit.session.emit(ev.TriageUpdated(host="gpu2", start=told.start, end=told.end + 1,
                                              findings=swapped, earlier=[]))
        await wait_for(lambda: screen._rows[0][1].cause == second)
        assert screen.selected == ("gpu2", second)
        # moved by the user: it stays on that cause when the ranking changes back
        await pilot.press("down")
        await wait_for(lambda: screen.selected == ("gpu2", top))
        cockpit.session.emit(ev.TriageUpdated(host="gpu2", start=told.start, end=told.end + 2,
                                              findings=ranked, earlier=[]))
        await wait_for(lambda: screen._rows[0][1].cause == top)
        await pilot.pause()
        assert screen.selected == ("gpu2", top) and table.cursor_row == 0
        cockpit.session.emit(ev.TriageUpdated(host="gpu2", start=told.start, end=told.end + 3,
                                              findings=swapped, earlier=[]))
        await wait_for(lambda: screen._rows[0][1].cause == second)
        await pilot.pause()
        assert screen.selected == ("gpu2", top) and table.cursor_row == 1


def test_a_server_that_exited_is_the_top_line_not_its_idle_gpu():
    """Issue 49.7: the server exited (status 2: an empty argument); the line
    said "the GPU idles 100 %: need evidence"."""
    from perftriage.core.model.reducer import apply
    from perftriage.core.model.state import SessionState
    from perftriage.ui.widgets.triage_text import top_line
    from tests.ui.test_triage_ui import triage_event

    state = SessionState()
    apply(state, triage_event("gpu1"))
    assert "launch-bound" in top_line(state, "gpu1").plain
    for kind, detail in (("starting", ""), ("ready", "ready line"),
                         ("exited", "exit status 2")):
        apply(state, ev.ServerEvent(server="sglang", host="gpu1", state=kind, detail=detail,
                                    t=40.0))
    line = top_line(state, "gpu1").plain
    assert line.startswith("triage server sglang exited (exit status 2) at 0:40"), line
    assert top_line(state).plain.startswith("triage gpu1: server sglang exited")
    assert "launch-bound" not in line
    apply(state, ev.ServerEvent(server="sglang", host="gpu1", state="starting", t=50.0))
    assert "launch-bound" in top_line(state, "gpu1").plain  # restarted: its findings again


def test_a_busy_gpu_without_the_gap_asks_for_the_bytes_a_step_must_move():
    """Issue 49.6: wasted-traffic and near-floor need the gap; Y never asked."""
    from perftriage.core.compare.recording import Recording
    from perftriage.core.model.findings import top
    from perftriage.core.triage.phases import triage
    from tests.core.test_triage_real import GRAPH
    from tests.core.test_triage_rules import _gap_samples

    rec = Recording()
    rec.feed(ev.ProfileCaptured(capture_id="prof1", host="gpu", summary=summarize_files(GRAPH),
                                t=10.0))
    [phase] = triage(rec, 0, 30)
    lead = next(f for f in phase.findings if f.next is not None and f.next.kind == "gap")
    assert lead.cause == "wasted-traffic" and not lead.confirmed
    # the free step first: Y, Enter opens the gap form, not a HEAVY ncu
    assert top(phase.findings) is lead and phase.findings[0] is lead
    assert any(f.cause == "kernel-below-roofline" and f.next is not None
               and f.next.kind == "ncu" for f in phase.findings)
    assert "need the bytes a step must move (G)" in lead.title
    _gap_samples(rec, 1, 30, gap=3.0, ratio=2.5)  # with the gap: the finding itself
    [phase] = triage(rec, 0, 30)
    assert not [f for f in phase.findings if f.next is not None and f.next.kind == "gap"]
    assert any(f.cause == "wasted-traffic" and f.confirmed for f in phase.findings)
    # healthy: the gap known and near its floor, near-floor on top and no kernel lead
    healthy = Recording()
    healthy.feed(ev.ProfileCaptured(capture_id="prof1", host="gpu",
                                    summary=summarize_files(GRAPH), t=10.0))
    _gap_samples(healthy, 1, 30, gap=1.1, ratio=1.0)
    [phase] = triage(healthy, 0, 30)
    assert top(phase.findings).cause == "near-floor"
    assert not [f for f in phase.findings if f.cause == "kernel-below-roofline"]


async def test_enter_on_the_gap_lead_opens_the_gap_form_prefilled_from_the_engine(tmp_path):
    import sys

    from perftriage.core.store.config import Config, HostConfig
    from perftriage.services.cockpit import Cockpit
    from perftriage.ui.screens.roofline import RooflineScreen
    from tests.core.test_triage_real import GRAPH
    from tests.ui.test_model_bytes import checkpoint, engine

    model = checkpoint(tmp_path, 16_060_000_000)
    srv = engine({"/get_model_info": {"model_path": model}, "/get_server_info": {"tp_size": 2}})
    url = f"http://127.0.0.1:{srv.server_port}/metrics"
    cockpit = Cockpit(Config(hosts=[HostConfig(name="localhost", ssh="localhost",
                                               metrics_url=url, python=sys.executable)]),
                      registry=None, sessions_dir=None)
    cockpit.started = True
    async with triage_view(cockpit, "localhost", GRAPH) as (app, pilot, screen):
        await wait_for(lambda: len(screen._rows) >= 2)
        at = next(i for i, (_, f) in enumerate(screen._rows)
                  if f.next is not None and f.next.kind == "gap")
        assert at == 0  # on top: Y then Enter opens the gap form, no arrow key
        await wait_for(lambda: "⏎ opens the gap form (G)" in detail(screen))
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, RooflineScreen), timeout=20)
        form = app.screen
        assert form.initial.values["weights_gb"] == "16.06"
        assert form.initial.values["gpus"] == "2"
        assert form.initial.notes["weights_gb"].startswith("metadata.total_size of ")
    srv.shutdown()
