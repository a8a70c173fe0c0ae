"""The gap verdict that names the frame (issue 33 item 5): on the real H200
idle run, once the GPU idles, a recent trace breakdown and a recent stacks
sample of that host join the verdict; older ones and other hosts' do not."""

from __future__ import annotations

from perftriage.core.analysis.gap_live import live_gap
from perftriage.core.analysis.why_idle import RECENT_S, why_idle
from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.core.probe_kinds.stacks_kind import STACKS_KIND
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.store import transcript
from tests.support.stacks_support import result, text
from tests.support.helpers import FIXTURES
from tests.support.stall_target import STALL_FUNCTION

IDLE_RUN = FIXTURES / "checks" / "h200-idle-run" / "transcript.jsonl"
EAGER = FIXTURES / "profile" / "eager-TP-0.trace.json.gz"


def idle_state(until: float = 45.5) -> SessionState:
    """The recorded H200 session up to a moment its GPU idles 94 %."""
    state = SessionState()
    for e in transcript.read(IDLE_RUN).events:
        if e.t <= until:
            apply(state, e)
    return state


def add_profile(state: SessionState, t: float, host: str = "localhost") -> None:
    apply(state, ev.ProfileCaptured(capture_id="prof1", host=host, t=t,
                                    summary=summarize_files([EAGER])))


def add_stacks(state: SessionState, t: float, host: str = "localhost") -> None:
    args = ["--seconds", "2"]
    v = STACKS_KIND.interpret(args, 0, result([{"pid": 7, "name": "sglang::scheduler_TP0",
                                                "rc": 0, "out": text("record-threads.raw"),
                                                "err": ""}]), "")
    apply(state, ev.ProbeQueued(probe_id="p9", host=host, kind="stacks", args=args, t=t - 2))
    apply(state, ev.ProbeFinished(probe_id="p9", status="ok", summary=v.summary, detail=v.detail,
                                  t=t))


def test_the_idle_verdict_names_the_cause_and_the_frame():
    state = idle_state()
    plain = live_gap(state, "localhost")
    assert plain is not None and plain.verdict_kind == "idle"
    assert plain.verdict.startswith("memory and links idle")
    add_profile(state, t=40.0)
    add_stacks(state, t=44.0)
    joined = live_gap(state, "localhost")
    assert joined is not None
    assert joined.verdict.startswith(plain.verdict + "; the host is late (host wait 100 % of idle, prof1); ")
    assert joined.verdict.endswith(f"sglang::scheduler_TP0 busy in `{STALL_FUNCTION}` "
                                   "(88 % of samples, p9)")


def test_old_or_other_hosts_evidence_does_not_join():
    state = idle_state()
    add_profile(state, t=45.5 - RECENT_S - 1)
    add_stacks(state, t=10.0, host="gpu-b")
    assert why_idle(state, "localhost", state.last_t, "idle") is None
    assert why_idle(state, "gpu-b", 12.0, "idle") is not None  # its own host's, when recent


def test_only_idle_verdicts_are_joined():
    state = idle_state()
    add_stacks(state, t=44.0)
    assert why_idle(state, "localhost", 45.0, "wasted-traffic") is None
    assert why_idle(state, "localhost", 45.0, "communication") is not None
