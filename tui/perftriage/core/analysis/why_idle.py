"""The gap verdict that names the frame: when the verdict says the GPU idles,
what the session has learnt of why in the last few minutes joins it — the
trace's idle breakdown (a profile captured on that host) and the engine's
stacks (a stacks probe on that host):

    memory and links idle 76 % of the time: ...; the host is late (host wait
    91 % of idle, prof3); sglang::scheduler_TP0 busy in `detokenize_and_schedule`
    (94 % of samples, p12)
"""

from __future__ import annotations

from typing import Any

from perftriage.core.profile.model import IdleBreakdown
from perftriage.core.stacks.summary import latest as latest_stacks

RECENT_S = 300.0  # evidence older than this (session seconds) does not join
IDLE_KINDS = frozenset({"idle", "communication"})  # gap verdicts that say the GPU idles
DOMINANT_PCT = 50.0  # an idle cause that holds at least this share is named as the cause


def breakdown_words(b: IdleBreakdown) -> str:
    """``the host is late (host wait 91 % of idle`` — the dominant cause first."""
    causes = [(b.host_wait_pct, "the host is late", "host wait"),
              (b.kernel_wait_pct, "back-to-back launches", "kernel wait"),
              (b.other_pct, "kernels wait on syncs or other streams", "other")]
    pct, words, label = max(causes, key=lambda c: c[0])
    if pct < DOMINANT_PCT:
        return (f"no single cause (host wait {b.host_wait_pct:.0f} %, kernel wait "
                f"{b.kernel_wait_pct:.0f} %, other {b.other_pct:.0f} % of idle")
    return f"{words} ({label} {pct:.0f} % of idle"


def _process_label(name: str, pid: int) -> str:
    first = name.split(" ", 1)[0]
    return first if "::" in first else f"pid {pid}"


def why_idle(state: Any, host: str, now: float, verdict_kind: str | None = None) -> str | None:
    """The joined words for ``host`` at session time ``now``; None when the
    verdict is not an idle one or nothing recent explains it."""
    if verdict_kind is not None and verdict_kind not in IDLE_KINDS:
        return None
    parts = []
    cap = next((c for c in reversed(getattr(state, "profiles", []) or [])
                if c.host == host and c.summary.idle_breakdown is not None), None)
    if cap is not None and now - cap.t <= RECENT_S:
        assert cap.summary.idle_breakdown is not None
        parts.append(f"{breakdown_words(cap.summary.idle_breakdown)}, {cap.capture_id})")
    got = latest_stacks(state.probes.values(), host)
    if got is not None:
        p, s = got
        proc = s.process_of_top()
        if s.top is not None and proc is not None and now - (p.finished_t or 0.0) <= RECENT_S:
            parts.append(f"{_process_label(proc.name, proc.pid)} busy in `{s.top.name}` "
                         f"({s.top.self_pct:.0f} % of samples, {p.probe_id})")
    return "; ".join(parts) or None
