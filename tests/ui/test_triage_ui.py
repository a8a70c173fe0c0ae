"""The Triage view (Y): findings ranked, Enter runs a finding's next step on
the finding's host (not the selected one), the earlier phases' lines on
top; the main screen's one line; the Gap view's verdict from the same
finding. The findings are the core triage's own, over real H200 traces."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.widgets import DataTable, Static

from perftriage.core.compare.recording import Recording
from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.findings import Earlier
from perftriage.core.model.state import SessionState
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.store.config import Config, HostConfig
from perftriage.core.triage.phases import triage
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.investigation.session import Session
from perftriage.ui.app import PerftriageApp
from perftriage.ui.screens.triage import TriageScreen
from perftriage.ui.widgets.triage_text import top_line
from tests.core.test_triage_real import EAGER, GRAPH
from tests.core.test_triage_rules import _stacks_detail
from tests.support.helpers import app_opening, wait_for


def _rec(host: str, t: float, files, with_stacks: bool) -> Recording:
    rec = Recording()
    rec.feed(ev.ProfileCaptured(capture_id="prof1", host=host, summary=summarize_files(files),
                                t=t))
    if with_stacks:
        rec.feed(ev.ProbeQueued(probe_id="p1", host=host, kind="stacks", args=[], t=t + 1))
        rec.feed(ev.ProbeFinished(probe_id="p1", status="ok", t=t + 2,
                                  detail=_stacks_detail(20.0, 75.0, 25.0)))
    return rec


def triage_event(host: str, files=EAGER, with_stacks: bool = False, t: float = 30.0,
                 earlier: list[Earlier] | None = None) -> ev.TriageUpdated:
    """What the live triage emits for ``host`` with a capture (and stacks) at 10 s."""
    [phase] = triage(_rec(host, 10.0, files, with_stacks), 0.0, t)
    return ev.TriageUpdated(host=host, start=phase.start, end=phase.end, t=t,
                            findings=list(phase.findings), earlier=earlier or [])


RESOLVED = [Earlier(cause="host-stall", state="resolved", explains_pct=60.0,
                   vs="the phase before",
                   text="host-stall: resolved — decode 936 → 2,900 tok/s ▲, p < 0.001")]


def recorded_state() -> SessionState:
    state = SessionState(name="triage")
    for e in (ev.ServerEvent(server="s", host="gpu2", state="starting", t=40.0),
              triage_event("gpu2", GRAPH, t=70.0, earlier=RESOLVED),
              triage_event("gpu1", EAGER, with_stacks=True, t=70.0)):
        apply(state, e)
    return state


def live_cockpit(tmp_path) -> Cockpit:
    """A live cockpit with hosts localhost and gpu2 (nothing started: the
    findings are emitted by the test, the probes recorded, not run)."""
    config = Config(hosts=[HostConfig(name="gpu2", ssh="gpu2",
                                      metrics_url="http://127.0.0.1:30000/metrics")])
    cockpit = Cockpit(config, registry=None, sessions_dir=None)
    cockpit.started = True  # no samplers, no SSH: the test feeds the session
    return cockpit


def derive(cockpit: Cockpit, *events: tuple[float, ev.Event]) -> None:
    """Feed ``events`` (at their session times) to ``cockpit`` and let its live
    triage evaluate them: Enter runs only what that triage derived."""
    for t, e in events:
        cockpit.session.continue_clock(t)
        cockpit.session.emit(e)
    assert cockpit.triage is not None
    cockpit.triage.evaluate(cockpit.session.state.last_t)


def record_probes(cockpit: Cockpit) -> list[tuple[str, str, list[str]]]:
    queued: list[tuple[str, str, list[str]]] = []

    def enqueue(host, kind, args, **_):
        queued.append((host, kind, list(args)))
        return f"p{len(queued)}"

    cockpit.probes.enqueue = enqueue  # type: ignore[method-assign]
    return queued


async def test_the_view_ranks_findings_and_enter_runs_the_step_on_the_findings_host(tmp_path):
    cockpit = live_cockpit(tmp_path)
    queued = record_probes(cockpit)
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 45)) as pilot:
        # the selected host is localhost; the finding is gpu2's
        assert app.probe_target.target(cockpit.registry.names) != "gpu2"
        derive(cockpit, (10.0, ev.ProfileCaptured(capture_id="prof1", host="gpu2",
                                                  summary=summarize_files(EAGER))))
        await pilot.press("Y")
        await wait_for(lambda: isinstance(app.screen, TriageScreen))
        screen = app.screen
        table = screen.query_one("#triage-findings", DataTable)
        await wait_for(lambda: table.row_count > 0)
        top = screen._rows[0][1]
        assert top.cause == "launch-bound" and top.next is not None and top.next.kind == "stacks"
        detail = str(screen.query_one("#triage-detail", Static).render())
        assert "shorter than their launch call" in detail and "capture prof1 at 0:10" in detail
        # the server's process: the one listening on the engine URL's port
        assert "⏎ runs: stacks --seconds 3 --port 30000 on gpu2" in detail
        await pilot.press("enter")
        await wait_for(lambda: queued)
        assert queued == [("gpu2", "stacks", ["--seconds", "3", "--port", "30000"])]
        detail = str(screen.query_one("#triage-detail", Static).render())
        assert "ran: stacks p1 queued on gpu2" in detail
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, TriageScreen))


# how the capture fails, and what the view then says: an error nobody planned
# for (a perftriage bug) is said too, never a step left "capturing" forever
FAILURES = [(OSError("no server"), "capture on gpu2 failed: no server"),
            (ValueError("a bug"), "capture on gpu2 failed: ValueError: a bug (a perftriage error)")]


@pytest.mark.parametrize(("error", "said"), FAILURES)
async def test_a_capture_runs_only_on_enter_through_the_profile_flow(tmp_path, error, said):
    cockpit = live_cockpit(tmp_path)
    captured: list[tuple[str, str, int | None]] = []

    async def capture(host, url, steps, progress=None):
        captured.append((host, url, steps))
        raise error

    cockpit.profiles.capture = capture  # type: ignore[method-assign]
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 45)) as pilot:
        derive(cockpit, (5.0, ev.GapSample(host="gpu2", gap=4.0)),
               (6.0, ev.GapSample(host="gpu2", gap=4.0)))
        await pilot.press("Y")
        await wait_for(lambda: isinstance(app.screen, TriageScreen))
        await pilot.pause(0.2)
        assert captured == []  # shown, not run
        assert "⏎ runs: a profile capture of 5 steps from http://127.0.0.1:30000 on gpu2" in \
            str(app.screen.query_one("#triage-detail", Static).render())
        await pilot.press("enter")
        await wait_for(lambda: captured)
        assert captured == [("gpu2", "http://127.0.0.1:30000", 5)]
        await wait_for(lambda: said in
                       str(app.screen.query_one("#triage-detail", Static).render()))


async def test_the_main_screen_shows_the_top_finding_in_one_line(tmp_path):
    cockpit = live_cockpit(tmp_path)
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 45)) as pilot:
        line = app.screen.query_one("#hyp-triage", Static)
        await wait_for(lambda: "triage no findings yet" in str(line.render()))
        cockpit.session.emit(triage_event("gpu2", EAGER, with_stacks=True))
        await wait_for(lambda: "host-stall" in str(line.render()))
        shown = str(line.render())
        assert shown.startswith("triage gpu2: high · host-stall · 60 % · the host's Python is "
                                "busy in `zq_detokenize_planted_stall`")
        assert len(shown.splitlines()) == 1
        await pilot.press("q")


def test_remote_text_is_never_markup():
    """A frame named like markup (`[2 x=1`, `[/]`) reaches the screen as text."""
    state = SessionState()
    e = triage_event("gpu[2 x=1", EAGER, with_stacks=True)
    e.findings[0].title = "busy in `[2 x=1` and [/] and [@click=app.quit]"
    apply(state, e)
    line = top_line(state)
    assert isinstance(line, Text)
    assert "busy in `[2 x=1` and [/] and [@click=app.quit]" in line.plain
    assert "gpu[2 x=1" in line.plain


def test_the_main_line_says_what_a_fix_resolved_before_the_finding_now_on_top():
    """After a fix the line said "(1 resolved)" at its end, which a
    100-column screen cuts: the resolved cause comes first."""
    state = recorded_state()  # gpu2: host-stall resolved by a restart, a lead on top now
    line = top_line(state, "gpu2").plain
    assert line.startswith("triage gpu2: ✔ host-stall resolved · lead · ")
    assert "host-stall resolved" not in top_line(state, "gpu1").plain  # gpu1's own earlier
    state.triage["gpu2"].findings.clear()  # nothing left on gpu2: still said
    line = top_line(state, "gpu2").plain
    assert line.startswith("triage ✔ host-stall resolved · nothing found"), line


async def test_replay_shows_the_findings_and_enter_says_why_nothing_runs():
    session = Session(state=recorded_state())
    cockpit = Cockpit(registry=HostRegistry(), session=session)
    app = app_opening(cockpit, TriageScreen)
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(lambda: isinstance(app.screen, TriageScreen))
        screen = app.screen
        await wait_for(lambda: screen.query_one("#triage-findings", DataTable).row_count > 0)
        # hosts by their top problem: gpu1's host-stall (60 %) before gpu2's leads
        assert [h for h, _ in screen._rows][0] == "gpu1"
        earlier = str(screen.query_one("#triage-earlier", Static).render())
        assert "gpu2: ✔ host-stall: resolved — decode 936 → 2,900 tok/s ▲" in earlier
        # gpu2's free gap lead first, then its ncu lead on the top kernels of a busy GPU
        first = next(i for i, (h, _) in enumerate(screen._rows) if h == "gpu2")
        assert screen._rows[first][1].next.kind == "gap"
        ncu = next(i for i, (h, f) in enumerate(screen._rows)
                   if h == "gpu2" and f.next is not None and f.next.kind == "ncu")
        await pilot.press(*["down"] * ncu)
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert "not now: replay" in str(screen.query_one("#triage-detail", Static).render())


def test_the_triage_view_snapshot(snap_compare):
    session = Session(state=recorded_state())
    app = app_opening(Cockpit(registry=HostRegistry(), session=session), TriageScreen)
    assert snap_compare(app, terminal_size=(160, 45))


async def test_the_gap_views_verdict_is_the_triages_top_finding(tmp_path):
    """The real H200 run's slow phase, with the live triage's finding for the
    host recorded: the Gap view's verdict is that finding (the main screen's
    line says the same), not the gap's own sentence beside it."""
    import json

    from tests.ui.test_gap_view import cut_transcript, open_gap_view

    path = cut_transcript(tmp_path, "slow")
    last = [json.loads(x) for x in path.read_text().splitlines()[1:]
            if '"t":' in x][-1]
    e = triage_event("localhost", EAGER, with_stacks=True, t=last["t"])
    e.wall = last["wall"]
    path.write_text(path.read_text() + ev.encode(e).decode() + "\n")
    text = await open_gap_view(path)
    verdict = next(line for line in text.splitlines() if line.startswith("verdict: "))
    assert verdict.startswith("verdict: high · host-stall · 60 % · the host's Python is busy")
    assert "held:" not in text  # the gap's own debounced verdict is not said beside it


async def test_at_100_columns_titles_end_in_an_ellipsis_and_nothing_scrolls_sideways():
    """The title column took each title whole: the findings table scrolled
    sideways and the title's end was off screen. Now it ends in "…" at the
    room left, and the detail below (Enter) has it whole."""
    session = Session(state=recorded_state())
    app = app_opening(Cockpit(registry=HostRegistry(), session=session), TriageScreen)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.5)
        table = app.screen.query_one("#triage-findings", DataTable)
        assert table.virtual_size.width <= table.scrollable_content_region.width
        titles = [table.get_row_at(r)[-1] for r in range(table.row_count)]
        assert any(t.plain.endswith("…") for t in titles)
        full = str(app.screen._rows[0][1].title)
        assert titles[0].plain[:-1] in full and len(titles[0].plain) < len(full)


async def test_a_finding_linked_to_a_hypothesis_opens_the_triage_view_on_it():
    """The live triage links a confirmed finding to the hypothesis whose
    check reads its cause; Enter on that evidence in the hypothesis's
    details opens the Triage view with the finding highlighted."""
    from perftriage.ui.screens.hypothesis_detail import HypothesisDetailScreen

    state = recorded_state()
    for e in (ev.HypothesisAdded(hyp_id="h1", title="eager launches",
                                 check='triage.top == "launch-bound"', t=71.0),
              ev.EvidenceLinked(hyp_id="h1", ref_kind="finding", ref_id="gpu1:launch-bound",
                                summary="gpu1: launch-bound …", t=72.0)):
        apply(state, e)
    app = PerftriageApp(Cockpit(registry=HostRegistry(), session=Session(state=state)))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0.3)
        app.push_screen(HypothesisDetailScreen("h1"))
        await wait_for(lambda: isinstance(app.screen, HypothesisDetailScreen))
        await pilot.pause(0.2)
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, TriageScreen))
        await pilot.pause(0.2)
        assert app.screen.selected == ("gpu1", "launch-bound")
        assert "launch-bound" in str(app.screen.query_one("#triage-detail", Static).render())
