"""The evidence picker (``E`` on a hypothesis) searches the whole log ring,
offers host facts (GPUs, topology), and evidence on a hypothesis opens what
it points at (Enter in the details view)."""

from __future__ import annotations

from perftriage.ui.app import PerftriageApp
from perftriage.core.model import events as ev
from perftriage.core.model.reducer import replay
from perftriage.core.view.evidence import candidates, topology_summary
from perftriage.ui.screens.host_detail import HostDetailScreen
from perftriage.ui.screens.hypothesis_detail import HypothesisDetailScreen
from perftriage.ui.screens.hypothesis_evidence import EvidencePickerScreen
from perftriage.ui.screens.probe_output import ProbeOutputScreen
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry, local_host
from perftriage.ui.widgets.logs import LogsPane
from tests.support.helpers import wait_for

RING_LINES = 5000
NEEDLE = "moe_runner_backend=flashinfer_cutedsl picked at start-up"
TOPO = {"columns": ["GPU0", "GPU1", "GPU2", "NIC0", "CPU Affinity"],
        "rows": [["GPU0", "X", "NV18", "NV18", "PIX", "0-47"],
                 ["GPU1", "NV18", "X", "NV18", "SYS", "0-47"],
                 ["GPU2", "NV18", "NV18", "X", "SYS", "48-95"],
                 ["NIC0", "PIX", "SYS", "SYS", "X", ""]],
        "legend": ["X = Self", "NV# = Connection traversing a bonded set of # NVLinks"]}


def _events() -> list[ev.Event]:
    lines = [f"INFO request {i} done" for i in range(RING_LINES)]
    lines[3] = NEEDLE  # far older than the notable lines the list starts with
    return [
        ev.LogSourceOpened(source_id="l1", host="gpu-a", path="/x/server.log"),
        ev.LogLines(source_id="l1", lines=lines),
        ev.HostInfo(host="gpu-a", info={"driver": "580.95.05", "topo": TOPO,
                                        "bandwidth_gbs": {"0": 4814.0}}),
    ]


def test_search_covers_every_line_of_the_ring_and_hosts() -> None:
    state = replay(_events())
    plain = candidates(state)
    assert not any(c.ref_kind == "log" for c in plain.items)  # nothing notable
    assert plain.log_lines == RING_LINES
    found = candidates(state, "cutedsl")
    assert [(c.ref_kind, c.ref_id) for c in found.items] == [("log", "l1:4")]
    assert found.log_matches == 1
    many = candidates(state, "request")  # capped list, every match counted
    assert many.log_matches == RING_LINES - 1 and len(many.items) == 500
    assert many.items[0].ref_id == f"l1:{RING_LINES}"  # newest first
    assert candidates(state, "[TP0").log_matches == 0  # not a regex: searched as text
    hosts = [c for c in plain.items if c.ref_kind == "host"]
    assert [c.ref_id for c in hosts] == ["gpu-a:gpus", "gpu-a:topology"]
    assert hosts[1].summary == "gpu-a topology: 3 GPUs; GPU↔GPU NV18 ×3; 1 NICs"
    assert "driver 580.95.05" in hosts[0].summary and "4814 GB/s" in hosts[0].summary
    assert [c.ref_id for c in candidates(state, "NV18").items] == ["gpu-a:topology"]


def test_topology_summary_counts_each_gpu_pair_once() -> None:
    topo = {"columns": ["GPU0", "GPU1", "GPU2", "GPU3"],
            "rows": [["GPU0", "X", "NV18", "SYS", "SYS"], ["GPU1", "NV18", "X", "SYS", "SYS"],
                     ["GPU2", "SYS", "SYS", "X", "NV18"], ["GPU3", "SYS", "SYS", "NV18", "X"]]}
    assert topology_summary("h", topo) == "h topology: 4 GPUs; GPU↔GPU SYS ×4, NV18 ×2"


def _app(tmp_path) -> PerftriageApp:
    reg = HostRegistry()
    reg.add(local_host())
    cockpit = Cockpit(registry=reg, sessions_dir=tmp_path, sample_interval=30)
    for e in _events():
        cockpit.session.emit(e)
    return PerftriageApp(cockpit)


async def _pick(pilot, *keys: str) -> None:
    await pilot.press("E")
    await wait_for(lambda: isinstance(pilot.app.screen, EvidencePickerScreen))
    await pilot.pause()
    await pilot.press(*keys)
    await pilot.pause()


async def _new_hypothesis(app, pilot, title: str):
    """``H`` TITLE ⏎ ⏎: the hypothesis added, selected for ``E``."""
    await pilot.press("H", *title, "enter", "enter")
    await wait_for(lambda: len(app.session.state.hypotheses) == 1)
    await pilot.pause()
    return app.session.state.hypotheses[0]


async def test_picker_searches_the_whole_ring_and_attaches_host_facts(tmp_path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        h = await _new_hypothesis(app, pilot, "cutedsl MoE backend")
        # a line 4997 lines back, not notable: found by searching
        await _pick(pilot, "slash", *"cutedsl", "enter")
        count = str(app.screen.query_one("#evidence-count").render())
        assert f"1 of {RING_LINES:,} log lines" in count
        await pilot.press("plus")
        await wait_for(lambda: len(h.evidence) == 1)
        assert (h.evidence[0].ref_kind, h.evidence[0].ref_id) == ("log", "l1:4")
        assert NEEDLE in h.evidence[0].summary
        # the picker stays open for the next piece: the host's topology, against
        assert isinstance(app.screen, EvidencePickerScreen)
        await pilot.press("slash", *"topology", "enter", "minus")
        await wait_for(lambda: len(h.evidence) == 2)
        e = h.evidence[1]
        assert (e.ref_kind, e.ref_id, e.stance) == ("host", "gpu-a:topology", "against")
        assert "NV18 ×3" in e.summary
        assert "attached: 2" in str(app.screen.query_one("#evidence-count").render())
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, EvidencePickerScreen))
        assert len(h.evidence) == 2  # Esc attaches nothing more
        await pilot.press("q")


async def test_the_picker_stays_open_until_esc_and_marks_what_it_attached(tmp_path) -> None:
    """It closed after each +: attaching three pieces took three visits."""
    app = _app(tmp_path)
    async with app.run_test(size=(160, 45)) as pilot:
        h = await _new_hypothesis(app, pilot, "two pieces")
        await _pick(pilot, "plus", "minus", "enter")  # the cursor moves on after each
        await wait_for(lambda: len(h.evidence) == 3)
        picker = app.screen
        assert isinstance(picker, EvidencePickerScreen)
        assert [e.stance for e in h.evidence] == ["for", "against", "for"]
        assert len({(e.ref_kind, e.ref_id) for e in h.evidence}) == 3
        table = picker.query_one("#evidence-table")
        kinds = [str(table.get_row_at(r)[1]) for r in range(3)]
        assert kinds[0].startswith("+ ") and kinds[1].startswith("− ") \
            and kinds[2].startswith("+ ")
        assert "attached: 3" in str(picker.query_one("#evidence-count").render())
        await pilot.press("escape")
        await wait_for(lambda: not isinstance(app.screen, EvidencePickerScreen))
        await pilot.press("q")


async def test_evidence_opens_the_probe_output_and_the_host(tmp_path) -> None:
    app = _app(tmp_path)
    s = app.session
    s.emit(ev.ProbeQueued(probe_id="p7", host="localhost", kind="import", args=["json"]))
    s.emit(ev.ProbeFinished(probe_id="p7", status="ok", exit_status=0, summary="json 2.0.9"))
    s.emit(ev.HypothesisAdded(hyp_id="h1", title="json is the slow part"))
    s.emit(ev.EvidenceLinked(hyp_id="h1", ref_kind="probe", ref_id="p7", summary="import json"))
    s.emit(ev.EvidenceLinked(hyp_id="h1", ref_kind="host", ref_id="gpu-a:topology",
                             stance="against", summary="gpu-a topology: 3 GPUs"))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, HypothesisDetailScreen))
        await pilot.pause()
        await pilot.press("enter")  # the first piece: the probe
        await wait_for(lambda: isinstance(app.screen, ProbeOutputScreen))
        assert app.screen.probe_id == "p7"
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, HypothesisDetailScreen))
        await pilot.press("down", "enter")  # the second: the host's topology
        await wait_for(lambda: isinstance(app.screen, HostDetailScreen))
        assert app.screen.host == "gpu-a"
        await pilot.press("escape")
        await pilot.press("escape")
        await pilot.press("q")


async def test_log_evidence_opens_the_line_in_the_logs_pane(tmp_path) -> None:
    app = _app(tmp_path)
    s = app.session
    s.emit(ev.LogSourceOpened(source_id="l2", host="gpu-a", path="/x/other.log"))
    s.emit(ev.LogLines(source_id="l2", lines=["another source"]))
    s.emit(ev.HypothesisAdded(hyp_id="h1", title="cutedsl picked"))
    s.emit(ev.EvidenceLinked(hyp_id="h1", ref_kind="log", ref_id="l1:4", summary=NEEDLE))
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.screen.query_one(LogsPane)
        await wait_for(lambda: "l2" in pane._sources)
        pane.select("l2")  # another source's tab: the line is shown in the merged one
        await pilot.pause()
        await pilot.press("4", "enter")
        await wait_for(lambda: isinstance(app.screen, HypothesisDetailScreen))
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(lambda: not isinstance(app.screen, HypothesisDetailScreen))
        await pilot.pause()
        view = pane.view
        assert pane.selected == "*" and app.focused is view
        assert view.cursor is not None and view.index.row(view.cursor)[1] == NEEDLE
        assert not view.follow  # it stays on the line
        await pilot.press("q")


async def test_a_burst_searches_and_attaches_in_typed_order(tmp_path) -> None:
    """``/start-up⏎+`` typed at once into the open picker with the loop
    loaded: the whole query (its ``-`` too) goes to the search, Enter returns
    to the list and ``+`` attaches the one match. As a plain modal the keys
    raced the focus change: the first item (the host's GPUs) was attached."""
    from tests.ui.test_form_keys import typed

    app = _app(tmp_path)
    app.session.emit(ev.HypothesisAdded(hyp_id="h1", title="cutedsl picked"))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        await _pick(pilot)
        await typed(app, "/start-up\r+", settle=2.0)
        h = app.session.state.hypotheses[0]
        await wait_for(lambda: len(h.evidence) >= 1)
        await pilot.pause(0.3)
        assert [(e.ref_kind, e.ref_id, e.stance) for e in h.evidence] == [("log", "l1:4", "for")]
        await pilot.press("q")
