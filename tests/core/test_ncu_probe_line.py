"""One share for "recoverable" (issue 41 item 11): the ncu probe's line says
the share is of the ncu run's own kernel time; with a capture in the session
that holds the kernel, the Probes pane's line uses the capture's share of the
step, and says so."""

from __future__ import annotations

import json
from pathlib import Path

from perftriage.core.model import events as ev
from perftriage.core.model.reducer import replay
from perftriage.core.model.state import SessionState
from perftriage.core.profile.model import KernelRow, ProfileSummary
from perftriage.core.view.probe_text import shown_summary

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ncu"


def _state(with_capture: bool) -> SessionState:
    probe = json.loads((FIX / "probe-ncu-moe-step.json").read_text())
    events: list[ev.Event] = [
        ev.ProbeQueued(probe_id="p1", host="h200", kind="ncu", args=[], t=1.0),
        ev.ProbeFinished(probe_id="p1", status="ok", summary="the probe's own line",
                         detail=probe["detail"], t=2.0)]
    if with_capture:
        rows = [KernelRow(name="fused_moe_kernel", bucket="moe", total_ms=2.2, calls=16,
                          avg_us=137.5, pct=22.0),
                KernelRow(name="other", bucket="other", total_ms=7.8, calls=1, avg_us=7800.0,
                          pct=78.0)]
        summary = ProfileSummary(files=[], ranks=1, window_ms=10.5, kernel_ms=10.0,
                                 idle_pct=4.8, exposed_comm_ms=0.0, buckets=[], kernels=rows)
        events.append(ev.ProfileCaptured(capture_id="prof2", host="h200", summary=summary, t=3.0))
    return replay(events, SessionState())


def test_the_probe_says_whose_share_it_is():
    import msgspec

    from perftriage.core.probe_kinds.ncu_kind import summary_line
    from perftriage.core.profile.ncu import NcuSummary

    probe = json.loads((FIX / "probe-ncu-moe-step.json").read_text())
    line = summary_line(msgspec.convert(probe["detail"]["ncu"], NcuSummary))
    assert "fused_moe_kernel" in line and "% of the ncu run's kernel time at 50 % of peak" in line


def test_with_a_capture_the_line_is_the_steps_share():
    state = _state(with_capture=True)
    line = shown_summary(state.probes["p1"], state.profiles)
    assert line.endswith("furthest below roofline: fused_moe_kernel 22.0 % of the step at 50 % "
                         "of peak (≈ 10.9 % of the step recoverable, shares from prof2)")


def test_without_a_capture_the_probes_own_line():
    state = _state(with_capture=False)
    assert shown_summary(state.probes["p1"], state.profiles) == "the probe's own line"
