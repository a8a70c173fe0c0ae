"""The live triage over the session's events (services/triage/live.py), the
next step of a finding run on the finding's host (next_step.py) and auto
mode (auto.py), without Textual."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from perftriage.core.checks.signals import Missing, ScopeKey, SignalTable
from perftriage.core.checks.catalogue import Signal, TRIAGE_CAUSES
from perftriage.core.model import events as ev
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.store.config import Config, HostConfig, ServerProfile
from perftriage.core.model.findings import CAUSES, Finding, NextStep
from perftriage.core.triage.phase import Phase
from perftriage.services.compare.baseline import Baseline
from perftriage.services.investigation.session import Session
from perftriage.services.triage import next_step
from perftriage.services.triage.auto import AutoSteps
from perftriage.services.triage.live import HostTriage, LiveTriage
from tests.core.test_triage_real import EAGER, GRAPH
from tests.core.test_triage_rules import RETRACT, _stacks_detail, decode_line


def at(session: Session, t: float, event: ev.Event) -> ev.Event:
    """Emit ``event`` at session time ``t`` (a live session stamps its own clock)."""
    session.continue_clock(t)
    return session.emit(event)


def triaged(session: Session) -> list[ev.TriageUpdated]:
    return [e for e in session_events(session) if isinstance(e, ev.TriageUpdated)]


_SEEN: dict[int, list[ev.Event]] = {}
OWN_HOSTS = ("gpu1", "gpu2")  # the hosts the cockpit of these tests has


def session_events(session: Session) -> list[ev.Event]:
    return _SEEN[id(session)]


def live_session() -> tuple[Session, Baseline, LiveTriage]:
    session = Session(name="t")
    seen: list[ev.Event] = []
    _SEEN[id(session)] = seen
    session.subscribe(seen.append)
    baseline = Baseline(session)
    return session, baseline, LiveTriage(session, baseline, own_hosts=lambda: OWN_HOSTS)


def decode(session: Session, t0: int, t1: int, host: str = "gpu1", gen: float = 800.0,
           extra: list[str] | None = None, source: str = "l1") -> None:
    if source not in session.state.logs:
        at(session, float(t0), ev.LogSourceOpened(source_id=source, host=host, path="/srv/log"))
    for t in range(t0, t1):
        at(session, float(t), ev.LogLines(source_id=source,
                                          lines=[decode_line(48, 0, 0.5, gen)] + (extra or [])))


def capture(session: Session, t: float, files, host: str = "gpu1", cid: str = "prof1") -> None:
    at(session, t, ev.ProfileCaptured(capture_id=cid, host=host, summary=summarize_files(files)))


def stacks(session: Session, t: float, host: str = "gpu1", probe_id: str = "p1",
           stall_pct: float = 75.0) -> None:
    at(session, t - 1, ev.ProbeQueued(probe_id=probe_id, host=host, kind="stacks", args=[]))
    at(session, t, ev.ProbeFinished(probe_id=probe_id, status="ok",
                                    detail=_stacks_detail(idle_pct=20.0, stall_pct=stall_pct,
                                                          forward_pct=100.0 - stall_pct)))


def test_the_live_triage_says_what_the_evidence_shows_and_emits_only_changes():
    session, _, live = live_session()
    decode(session, 1, 20)
    assert live.tick()
    first = triaged(session)
    assert len(first) == 1 and first[0].host == "gpu1"
    # a decode rate and nothing else: a capture would tell
    assert first[0].findings[0].next.kind == "capture"
    assert not live.tick()  # nothing new, same second: no evaluation
    decode(session, 20, 22)
    live.tick()
    assert len(triaged(session)) == 1  # evaluated again, nothing changed: nothing emitted
    capture(session, 22.5, EAGER)
    stacks(session, 24.0)
    assert live.tick()
    last = triaged(session)[-1]
    assert [f.cause for f in last.findings][:2] == ["host-stall", "launch-bound"]
    assert "zq_detokenize_planted_stall" in last.findings[0].title
    # the state holds it (Section.TRIAGE), the checks read it
    assert session.state.triage["gpu1"] is last
    scope = ScopeKey("host", host="gpu1")
    # (the table caches by the signal's id, as compiled checks keep theirs: keep them alive)
    signals = [Signal("triage", f) for f in ("top", "host_stall_pct", "kv_pressure_pct")]
    top, stall, kv = (SignalTable(session.state, 25.0).read(s, scope) for s in signals)
    assert top == "host-stall" and stall == pytest.approx(60.0) and kv == 0.0
    assert isinstance(SignalTable(session.state, 25.0).read(signals[0], ScopeKey("host", host="x")),
                      Missing)


def test_a_lead_is_no_data_for_the_checks_not_zero():
    session, _, live = live_session()
    decode(session, 1, 20)
    live.tick()
    value = SignalTable(session.state, 20.0).read(Signal("triage", "launch_bound_pct"),
                                                  ScopeKey("host", host="gpu1"))
    assert isinstance(value, Missing) and "capture" in value.reason


def test_the_check_catalogue_knows_every_cause():
    assert set(TRIAGE_CAUSES) == set(CAUSES) - {"need-evidence"}


def test_after_a_restart_the_earlier_finding_says_resolved_and_stays():
    session, _, live = live_session()
    decode(session, 1, 40, gen=900.0)
    capture(session, 20.0, EAGER)
    stacks(session, 22.0)
    live.tick()
    assert triaged(session)[-1].findings[0].cause == "host-stall"
    at(session, 40.0, ev.ServerEvent(server="s", host="gpu1", state="starting"))
    decode(session, 41, 80, gen=2900.0)
    capture(session, 60.0, GRAPH, cid="prof2")
    live.tick()
    # throughput rose and a capture was taken, but no stacks: the stall is not known yet,
    # and the phase carries a lead whose step takes stacks again (issue 49.3)
    waiting = {e.cause: e for e in triaged(session)[-1].earlier}["host-stall"]
    assert waiting.state == "unknown" and waiting.next is not None \
        and waiting.next.kind == "stacks"
    assert "decode 900 → 2,900" in waiting.text.replace("2900", "2,900")
    lead = next(f for f in triaged(session)[-1].findings if f.cause == "host-stall")
    assert not lead.confirmed and lead.next is not None and lead.next.kind == "stacks"
    stacks(session, 70.0, probe_id="p2", stall_pct=0.0)
    decode(session, 80, 81, gen=2900.0)
    live.tick()
    last = triaged(session)[-1]
    assert last.run_start and last.start == pytest.approx(40.0, abs=1)
    lines = {e.cause: e for e in last.earlier}
    assert lines["host-stall"].state == "resolved" and lines["host-stall"].vs == \
        "the phase before"
    assert "stacks p2" in lines["host-stall"].text
    assert "decode 900 → 2,900" in lines["host-stall"].text.replace("2900", "2,900")
    # once the phase before is pruned from the live recording, the lines stay
    live.baseline.live.prune(45.0)
    decode(session, 80, 82, gen=2900.0)
    live.tick()
    assert session.state.triage["gpu1"].earlier == last.earlier


def test_the_baseline_is_the_phase_before():
    session, baseline, live = live_session()
    decode(session, 1, 40, gen=900.0)
    capture(session, 20.0, EAGER)
    stacks(session, 22.0)
    baseline.mark("0:05-0:35")
    at(session, 40.0, ev.ServerEvent(server="s", host="gpu1", state="starting"))
    decode(session, 41, 80, gen=2900.0)
    capture(session, 60.0, GRAPH, cid="prof2")
    stacks(session, 70.0, probe_id="p2", stall_pct=0.0)
    live.tick()  # (the baseline's window is read while the live recording holds it)
    # the phase before is gone from the live recording: the baseline still speaks
    live.baseline.live.prune(39.0)
    live._kept.clear()
    decode(session, 80, 82, gen=2900.0)
    live.tick()
    earlier = triaged(session)[-1].earlier
    assert {e.vs for e in earlier} == {"the baseline"}
    assert any(e.cause == "host-stall" and e.state == "resolved" for e in earlier)
    assert all("(against 0:05–0:35)" in e.text for e in earlier)


# --- the next step: on the finding's host ------------------------------------------


class FakeProbes:
    def __init__(self) -> None:
        self.queued: list[tuple[str, str, list[str]]] = []

    def enqueue(self, host: str, kind: str, args, **_: Any) -> str:
        self.queued.append((host, kind, list(args)))
        return f"p{len(self.queued)}"


class FakeProfiles:
    def __init__(self) -> None:
        self.captured: list[tuple[str, str, int | None]] = []

    def default_url(self, host: str) -> str:
        return f"http://{host}:30000"

    async def capture(self, host: str, url: str, steps: int | None, progress=None):
        self.captured.append((host, url, steps))
        return ev.ProfileCaptured(capture_id="prof9", host=host, files=["a", "b"],
                                  summary=summarize_files(GRAPH))


class FakeCockpit:
    def __init__(self, config: Config | None = None) -> None:
        from perftriage.services.sources.base import SourceSet

        self.session = Session(name="t")
        # the engine URL stacks take the server's port from
        self.config = config or Config(hosts=[HostConfig(
            name=h, ssh=h, metrics_url=f"http://127.0.0.1:3000{h[-1]}/metrics")
            for h in ("gpu1", "gpu2")])
        self.triage: LiveTriage | None = None
        self.servers = SimpleNamespace(runs={})
        self.sources = SourceSet()
        self.probes = FakeProbes()
        self.profiles = FakeProfiles()
        self.engines: list[tuple[str, str]] = []
        self.tasks: list[asyncio.Task] = []

    def add_engine(self, url: str, host: str = "localhost", *, record: bool = True) -> str:
        self.engines.append((url, host))
        return f"engine:{host}"

    def spawn(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.append(task)
        return task


def auto_cockpit(every_finding: bool = True) -> tuple[FakeCockpit, Session, list[ev.Event],
                                                     LiveTriage, AutoSteps]:
    """A cockpit with its live triage and its auto steps, and every event
    it emits from now on."""
    c = FakeCockpit()
    seen: list[ev.Event] = []
    c.session.subscribe(seen.append)
    live = LiveTriage(c.session, Baseline(c.session))
    c.triage = live
    return c, c.session, seen, live, AutoSteps(c, live, every_finding=every_finding)


def derived(c: FakeCockpit, host: str, step: NextStep, cause: str = "x") -> dict[str, Any]:
    """``c``'s live triage found ``cause`` on ``host`` with next step ``step``;
    the finding as the Triage view shows it."""
    if c.triage is None:
        c.triage = LiveTriage(c.session, Baseline(c.session))
    f = Finding(cause, "title", 20.0, host=host, next=step)
    c.triage.current[host] = HostTriage(host, Phase(host, 0.0, 10.0, [f], False))
    return f.public()


def test_stacks_runs_on_the_findings_host_on_its_servers_port():
    c = FakeCockpit()
    # the step's own args are never run: the cockpit rebuilds them
    p = next_step.plan(c, "gpu2", derived(c, "gpu2", NextStep("stacks", ["--pid", "1"], "x")))
    assert p is not None and p.host == "gpu2" and p.args == ["--seconds", "3", "--port", "30002"]
    assert "on gpu2" in p.text and not p.pauses
    out = next_step.run(c, p)
    assert out.started and c.probes.queued == [("gpu2", "stacks", p.args)]
    assert out.text == "stacks p1 queued on gpu2"


async def test_capture_runs_what_the_profile_form_runs_on_the_findings_host():
    c = FakeCockpit()
    p = next_step.plan(c, "gpu2", derived(c, "gpu2", NextStep("capture", ["http://x/", "9"], "w")))
    assert p is not None and p.pauses and "5 steps from http://gpu2:30000 on gpu2" in p.text
    out = next_step.run(c, p)
    assert out.task is not None
    # while it runs, Enter says so and never starts a second one
    shown = c.triage.current["gpu2"].findings[0].public()  # type: ignore[union-attr]
    busy = next_step.plan(c, "gpu2", shown)
    assert busy is not None and busy.problem is not None
    assert busy.problem.startswith("a capture on gpu2, running since 0:00")
    assert not next_step.run(c, p).started
    assert await out.task == "prof9: 2 trace file(s) from gpu2"
    assert c.profiles.captured == [("gpu2", "http://gpu2:30000", 5)]
    assert next_step.plan(c, "gpu2", shown).problem is None  # type: ignore[union-attr]


def test_ncu_takes_the_kernel_names_a_launch_bound_and_the_profile_command():
    config = Config(servers=[ServerProfile(
        name="sglang", host="gpu2", command="python -m sglang.launch_server --model {model}",
        profile_command="PYTHONPATH=/src python -m sglang.bench_one_batch --model-path {model}"
                        " {flags} --batch-size 8",
        args={"model": "/m/Qwen 3", "flags": ""})])
    c = FakeCockpit(config)
    step = NextStep("ncu", ["--kernel", "anything", "--", "sh"], "why",
                    kernels=("fused_moe_kernel", "void ns::gemv<float>(x)", "gemv<int>(y)"))
    p = next_step.plan(c, "gpu2", derived(c, "gpu2", step))
    assert p is not None and p.problem is None and p.pauses
    # an empty placeholder is no word; the VAR=value prefix goes through env
    assert p.args == ["--kernel", "fused_moe_kernel|gemv", "--launches", "8",
                      "--", "env", "PYTHONPATH=/src", "python", "-m", "sglang.bench_one_batch",
                      "--model-path", "/m/Qwen 3", "--batch-size", "8"]
    assert p.text.startswith("ncu on 2 kernel(s) (fused_moe_kernel, gemv), 8 launches, over "
                             "sglang's profile_command on gpu2 (HEAVY")
    assert next_step.run(c, p).started and c.probes.queued[0][:2] == ("gpu2", "ncu")
    # every kernel: a bound all the same
    p = next_step.plan(c, "gpu2", derived(c, "gpu2", NextStep("ncu", [], "why")))
    assert p is not None and p.args[:3] == ["--launches", "40", "--"]


def test_ncu_refuses_the_servers_own_command():
    c = FakeCockpit(Config(servers=[ServerProfile(name="sglang", host="gpu2",
                                                  command="python -m sglang.launch_server")]))
    step = NextStep("ncu", [], "why", kernels=("k",))
    p = next_step.plan(c, "gpu2", derived(c, "gpu2", step))
    assert p is not None and p.problem is not None
    assert p.problem.startswith("no profile_command in [[servers]] sglang: ncu under the "
                                "server's own command would start a second copy")
    assert not next_step.run(c, p).started and not next_step.run(c, p).started
    # no profile on that host at all: said
    p = next_step.plan(c, "gpu1", derived(c, "gpu1", step))
    assert p is not None and p.problem is not None and "no [[servers]] profile on gpu1" in p.problem
    assert c.probes.queued == []


def test_log_search_and_metrics():
    c = FakeCockpit(Config(servers=[ServerProfile(name="s", host="gpu2", command="x",
                                                  metrics_url="http://127.0.0.1:31000/metrics")]))
    p = next_step.plan(c, "gpu2", derived(c, "gpu2", NextStep("log-search", ["Retract"], "w")))
    assert p is not None
    assert next_step.run(c, p).search == ("gpu2", "Retract")
    p = next_step.plan(c, "gpu2", derived(c, "gpu2", NextStep("metrics", [], "why")))
    assert p is not None and next_step.run(c, p).started
    assert c.engines == [("http://127.0.0.1:31000/metrics", "gpu2")]


def test_a_step_is_refused_where_no_host_runs():
    from perftriage.services.investigation.session import REPLAY

    c = FakeCockpit()
    f = derived(c, "gpu2", NextStep("stacks", [], "why"))
    c.session.mode = REPLAY
    p = next_step.plan(c, "gpu2", f)
    assert p is not None and p.problem is not None and not next_step.run(c, p).started
    assert c.probes.queued == []


def test_a_finding_the_live_triage_did_not_derive_is_history():
    c = FakeCockpit()
    derived(c, "gpu2", NextStep("stacks", [], "why"), cause="launch-bound")
    shown = {"cause": "host-stall", "next": {"kind": "stacks", "args": ["--pid", "1"]}}
    p = next_step.plan(c, "gpu2", shown)  # another cause: not found live
    assert p is not None and p.problem == next_step.HISTORY and p.args == []
    p = next_step.plan(c, "gpu1", {**shown, "cause": "launch-bound"})  # another host
    assert p is not None and p.problem == next_step.HISTORY
    assert not next_step.run(c, p).started and c.probes.queued == []


# --- auto mode ---------------------------------------------------------------------


def test_auto_mode_runs_the_cheap_steps_once_per_phase_never_a_capture():
    c, session, seen, live, auto = auto_cockpit()
    decode(session, 1, 20)
    live.tick()
    assert c.probes.queued == [] and c.profiles.captured == []  # a capture waits for Enter
    capture(session, 20.0, EAGER)  # (the person pressed Enter on it)
    live.tick()
    assert c.probes.queued == [("gpu1", "stacks", ["--seconds", "3", "--port", "30001"])]
    notes = [e.text for e in seen if isinstance(e, ev.NoteAdded)]
    assert notes == ["triage auto, for launch-bound: stacks p1 queued on gpu1"]
    decode(session, 21, 23)
    live.tick()
    assert len(c.probes.queued) == 1  # once per phase and kind
    # a new server process: a new phase, the stacks of the old one are history
    at(session, 30.0, ev.ServerEvent(server="s", host="gpu1", state="starting"))
    decode(session, 31, 50)
    capture(session, 45.0, EAGER, cid="prof2")
    live.tick()
    assert len(c.probes.queued) == 2 and auto.ran[("gpu1", "stacks")] >= 45.0


def test_auto_mode_scans_the_log_for_retractions():
    c, session, seen, live, _ = auto_cockpit()
    for t in range(1, 61):
        at(session, float(t), ev.LogLines(source_id="l1", lines=[decode_line(60, 12, 0.99)]
                                          + ([RETRACT] if t % 10 == 0 else []))) \
            if t > 1 else (at(session, 0.5, ev.LogSourceOpened(source_id="l1", host="gpu1",
                                                               path="/srv/log")),
                           at(session, 1.0, ev.LogLines(source_id="l1",
                                                        lines=[decode_line(60, 12, 0.99)])))
    live.tick()
    notes = [e.text for e in seen if isinstance(e, ev.NoteAdded)]
    assert any("for kv-pressure: log scan /Retract/ on gpu1: 6 line(s) match" in n
               for n in notes), notes


def test_a_hypothesis_whose_check_reads_a_cause_gets_its_confirmed_finding_as_evidence():
    """The triage confirms host-stall on gpu1: the hypothesis checking
    triage.host_stall_pct gets the finding (for, once), the one checking
    launch-bound gets its own, the one without a triage check nothing."""
    session, _, live = live_session()
    at(session, 0.5, ev.HypothesisAdded(hyp_id="h1", title="the scheduler stalls",
                                        check="triage.host_stall_pct >= 15"))
    at(session, 0.6, ev.HypothesisAdded(hyp_id="h2", title="the KV cache is full",
                                        check='triage.top == "kv-pressure"'))
    at(session, 0.7, ev.HypothesisAdded(hyp_id="h3", title="no check"))
    decode(session, 1, 20)
    live.tick()
    assert not [e for e in session_events(session) if isinstance(e, ev.EvidenceLinked)]
    capture(session, 22.5, EAGER)
    stacks(session, 24.0)
    assert live.tick()
    linked = [e for e in session_events(session) if isinstance(e, ev.EvidenceLinked)]
    assert [(e.hyp_id, e.ref_kind, e.ref_id, e.stance) for e in linked] == [
        ("h1", "finding", "gpu1:host-stall", "for")]
    assert "zq_detokenize_planted_stall" in linked[0].summary
    h1 = session.state.hypothesis("h1")
    assert h1 is not None and [e.ref_id for e in h1.evidence] == ["gpu1:host-stall"]
    decode(session, 25, 28)
    live.tick()  # evaluated again: linked already, not twice
    assert len([e for e in session_events(session) if isinstance(e, ev.EvidenceLinked)]) == 1


async def test_without_auto_mode_only_the_witness_of_a_fix_runs_by_itself():
    """Issue 49.3: after a restart the stall and the launch-bound of the phase
    before are "not known yet" until their witnesses are taken again; the
    cockpit takes each once by itself — stacks (cheap, never pauses) and, once
    the new server decodes, one capture (the change was made to fix it: on a
    real H200 launch-bound stayed "not known yet" without a key) — and nothing
    else runs without a key."""
    c, session, seen, live, _ = auto_cockpit(every_finding=False)
    decode(session, 1, 40, gen=900.0)
    capture(session, 20.0, EAGER)
    live.tick()
    stacks(session, 22.0)  # (Enter on the lead)
    decode(session, 40, 41, gen=900.0)
    live.tick()
    told = [e for e in seen if isinstance(e, ev.TriageUpdated)]
    assert told[-1].findings[0].cause == "host-stall"
    assert {f.cause for f in told[-1].findings} >= {"host-stall", "launch-bound"}
    assert c.probes.queued == [] and c.profiles.captured == []
    at(session, 45.0, ev.ServerEvent(server="s", host="gpu1", state="starting"))
    decode(session, 46, 47, gen=2900.0)
    live.tick()
    assert c.profiles.captured == []  # the new server's first second: no capture of its start
    decode(session, 47, 70, gen=2900.0)
    live.tick()
    await asyncio.gather(*c.tasks)
    assert c.probes.queued == [("gpu1", "stacks", ["--seconds", "3", "--port", "30001"])]
    assert c.profiles.captured == [("gpu1", "http://gpu1:30000", 5)]  # the form's URL
    notes = [e.text for e in seen if isinstance(e, ev.NoteAdded)]
    assert notes[0] == ("triage, to tell whether the change removed host-stall: "
                        "stacks p1 queued on gpu1")
    assert notes[1].startswith("triage, to tell whether the change removed launch-bound: ")
    decode(session, 70, 72, gen=2900.0)
    live.tick()
    await asyncio.gather(*c.tasks)
    assert len(c.probes.queued) == 1 and len(c.profiles.captured) == 1  # once per phase


def test_an_ssh_host_and_localhost_with_the_same_gpus_are_one_machine():
    """Issue 49.7: the capture on one name and the stacks on the other made
    two half-diagnoses; the same GPU UUIDs make them one, said once."""
    from perftriage.core.parse.gpu_sample import GpuSample

    session, _, live = live_session()
    gpus = [GpuSample(index=i, name="NVIDIA H200", uuid=f"GPU-{i}aa") for i in range(2)]
    for host in ("gpu1", "localhost"):
        at(session, 0.5, ev.HostSample(host=host, gpus=gpus))
    decode(session, 1, 40, gen=900.0)
    capture(session, 20.0, EAGER)  # on gpu1
    stacks(session, 22.0, host="localhost")  # the same machine, by its other name
    live.tick()
    told = triaged(session)
    assert {e.host for e in told} == {"gpu1"}
    top = told[-1].findings[0]
    assert top.cause == "host-stall" and top.confirmed
    notes = [e.text for e in session_events(session) if isinstance(e, ev.NoteAdded)]
    assert notes == ["localhost and gpu1 are the same machine (the same 2 GPU UUIDs): the "
                     "triage reads their evidence as gpu1's"]
    decode(session, 40, 42, gen=900.0)
    live.tick()
    assert len([e for e in session_events(session) if isinstance(e, ev.NoteAdded)]) == 1
    # another machine (other UUIDs) stays its own
    other = [GpuSample(index=0, name="NVIDIA H200", uuid="GPU-other")]
    at(session, 43.0, ev.HostSample(host="gpu3", gpus=other))
    assert same_machine_aliases(session) == {"localhost": "gpu1"}


def test_a_host_triaged_before_its_machine_was_known_leaves_the_state():
    """localhost is triaged before the SSH host's first sample (its UUIDs)
    arrives; once they say one machine, the live triage hands localhost's
    place to gpu1 (``same_as``): the state, and so the Triage view, the main
    screen's line and ``replay --json``, hold gpu1 alone, as ``perftriage
    triage`` names it, and no "localhost: nothing found" marker is made."""
    from perftriage.core.parse.gpu_sample import GpuSample
    from perftriage.core.replay.timeline import marker_for, marker_context, new_state
    from perftriage.core.model import reducer

    session, _, live = live_session()
    gpus = [GpuSample(index=0, name="NVIDIA H200", uuid="GPU-0aa")]
    at(session, 0.5, ev.HostSample(host="localhost", gpus=gpus))
    decode(session, 1, 20, host="localhost")
    live.tick()
    assert set(session.state.triage) == {"localhost"}
    at(session, 20.5, ev.HostSample(host="gpu1", gpus=gpus))
    decode(session, 21, 23, host="localhost")
    live.tick()
    assert set(session.state.triage) == {"gpu1"}
    handed = [e for e in triaged(session) if e.same_as]
    assert [(e.host, e.same_as, e.findings) for e in handed] == [("localhost", "gpu1", [])]
    # the events read again (a replay): the same state, no marker for the hand-over
    state, markers = new_state({}, "t"), []
    for i, e in enumerate(session_events(session)):
        before = marker_context(state, e)
        reducer.apply(state, e)
        if (m := marker_for(state, e, i, before)) is not None and m.kind == "triage":
            markers.append(m.label)
    assert set(state.triage) == {"gpu1"}
    assert not [m for m in markers if m.startswith("localhost: nothing")], markers


def same_machine_aliases(session):
    from perftriage.core.triage.same_machine import aliases, uuids_of

    return aliases(uuids_of(session.state))
