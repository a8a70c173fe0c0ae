"""What became of a phase's findings in the phase after it (a restart, a
change of level, the baseline against now).

A finding is **resolved** only when its own witness (declared on its rule,
:mod:`.rules`), taken again inside the phase after, no longer finds it: a capture for launch-bound and
host-sync, stacks for host-stall, ncu for the kernels' roofline, the log (or
the engine's ``/metrics``) for KV and queueing, the gap for wasted traffic,
NVML for GPU clocks, the host's CPU readings for cpu-throttle. Throughput
rising says the change helped, not which cause went away: the before/after
verdict stays beside it as the **outcome** of the change. Until the witness
is taken again the finding is "not known yet", and the phase after carries a
lead for it whose next step takes that witness (Enter in the Triage view).

The outcome waits for the comparison's minimum readings a side instead of
flipping with the first seconds' medians, and says what it waits for. For
the causes whose rule says ``per_request`` (kv-pressure, queueing: a fix
that changes the batch) "the step got slower" is read per request at like
batch (``compare``'s per-request view): a smaller batch is not a slower step.
"""

from __future__ import annotations

from perftriage.core.compare.numbers import fmt
from perftriage.core.compare.recording import Recording
from perftriage.core.compare.stats import MIN_READINGS, Better, judge, p_text
from perftriage.core.model.findings import Earlier, EarlierState, Finding, NextStep
from perftriage.core.triage import diagnose as _diagnose  # noqa: F401 - every rule registered
from perftriage.core.triage import rules
from perftriage.core.triage.phase import WITNESS_NAME, Phase, Taken
from perftriage.core.triage.witnesses import Witnesses

NO_SIGNAL = "no signal to compare"
ARROW = {"improved": "▲", "regressed": "▼", "no change": "=", "not enough data": "?"}
# the signal a before/after is read on, best first: (series, label, unit, better)
SIGNALS: tuple[tuple[str, str, str, Better], ...] = (
    ("gap", "gap", "x", "lower"), ("decode_tps", "decode", " tok/s", "higher"),
    ("engine_gen_tps", "decode (engine)", " tok/s", "higher"))
# readings a series needs inside the phase before it says anything (as the verdict)
SERIES_WITNESS: dict[str, tuple[str, ...]] = {
    "log": ("token_usage", "running", "queued"),
    "engine": ("engine_running", "engine_queued", "engine_token_usage"),
    "gap": ("gap",), "nvml": ("gpu_util",),
    "host": ("cpu_psi_some", "cpu_throttled_pct", "cpu_psi_some_cgroup", "cpu_throttled_time_pct"),
}
# the step that takes a witness again, when the finding before named none of that kind
RETAKE: dict[str, NextStep] = {
    "capture": NextStep("capture", [], "take the witness again: a capture says whether it is gone"),
    "stacks": NextStep("stacks", ["--seconds", "3"],
                       "take the witness again: stacks say whether the frame is gone"),
}
LIKE_BATCH = 0.25  # "like batch": running within this share of the phase before's median


def measured(rec: Recording, w: Witnesses) -> dict[str, Taken]:
    """Each witness taken inside ``w``'s window: the freshest capture, stacks
    and ncu result; a series witness once it has MIN_READINGS seconds."""
    out: dict[str, Taken] = {}
    for name, got in (("capture", w.capture), ("stacks", w.stacks), ("ncu", w.ncu)):
        if got is not None:
            out[name] = Taken(name, got.t, got.source)
    for name, metrics in SERIES_WITNESS.items():
        for metric in metrics:
            series = rec.series.get((metric, w.host, -1))
            if series is None:
                continue
            ts, _ = series.per_second(w.start, w.end)
            if len(ts) >= MIN_READINGS:
                out[name] = Taken(name, ts[-1])
                break
    return out


def _judged(label: str, unit: str, a: list[float], b: list[float], better: Better) -> str:
    j = judge(a, b, better)
    text = f"{label} {fmt(j.a.median)} → {fmt(j.b.median)}{unit} {ARROW[j.verdict]}"
    if j.verdict == "not enough data":
        return text + (f" (waits for {MIN_READINGS} readings a side: "
                       f"{len(a)} before, {len(b)} after)")
    return text + (f", {p_text(j.p_value)}" if j.p_value is not None else "")


def signal_verdict(rec: Recording, host: str, before: Phase, after: Phase,
                   before_rec: Recording | None = None) -> str:
    for metric, label, unit, better in SIGNALS:
        series = rec.series.get((metric, host, -1))
        was = (before_rec or rec).series.get((metric, host, -1))
        if series is None or was is None:
            continue
        _, a = was.per_second(before.start, before.end)
        _, b = series.per_second(after.start, after.end)
        if not a or not b:
            continue
        return _judged(label, unit, a, b, better)
    return NO_SIGNAL


def _per_request(rec: Recording, host: str, start: float, end: float
                 ) -> list[tuple[float, float]]:
    """(running, ms per token per request) of each second with both readings."""
    for running, tps in (("running", "decode_tps"), ("engine_running", "engine_gen_tps")):
        r, d = rec.series.get((running, host, -1)), rec.series.get((tps, host, -1))
        if r is None or d is None:
            continue
        rt, rv = r.per_second(start, end)
        dt, dv = d.per_second(start, end)
        rate = dict(zip(dt, dv))
        out = [(n, 1000.0 * n / rate[t]) for t, n in zip(rt, rv) if n > 0 and rate.get(t)]
        if out:
            return out
    return []


def per_request_verdict(rec: Recording, host: str, before: Phase, after: Phase,
                        before_rec: Recording | None = None) -> str | None:
    """ms per token per request at like batch (running within LIKE_BATCH of
    the phase before's median), else None (no running-request readings)."""
    a = _per_request(before_rec or rec, host, before.start, before.end)
    b = _per_request(rec, host, after.start, after.end)
    if not a or not b:
        return None
    batch = sorted(n for n, _ in a)[len(a) // 2]
    lo, hi = batch * (1 - LIKE_BATCH), batch * (1 + LIKE_BATCH)
    like_a = [v for n, v in a if lo <= n <= hi]
    like_b = [v for n, v in b if lo <= n <= hi]
    label = f"per-request time per token at like batch ({batch:.0f} running)"
    if not like_b:
        return f"{label}: no reading after at like batch yet (waits for {MIN_READINGS})"
    return _judged(label, " ms", like_a, like_b, "lower")


def _name(f: Finding) -> str:
    return f"{f.cause} (a lead)" if f.is_lead else f.cause


def _own(f: Finding) -> tuple[str, ...]:
    own = rules.own_witness().get(f.cause, ())  # declared on its rule
    if f.is_lead:  # a lead is told again by what suspected it
        own += tuple(e.witness for e in f.evidence if e.witness not in own)
    return own


def _retake(f: Finding, own: tuple[str, ...]) -> NextStep | None:
    if f.next is not None and f.next.kind in own + tuple(
            "log-search" if w == "log" else "metrics" if w == "engine" else w for w in own):
        return f.next
    return next((RETAKE[w] for w in own if w in RETAKE), None)


def not_known_lead(f: Finding, own: tuple[str, ...], step: NextStep | None) -> Finding:
    """The phase after's lead for a finding its witness has not told again."""
    was = "" if f.explains_pct is None else f"{f.explains_pct:.0f} % of the time before; "
    need = " or ".join(WITNESS_NAME.get(w, w) for w in own) or "its witness"
    return Finding(cause=f.cause, host=f.host, confirmed=False, explains_pct=None,
                   title=f"{was}not known yet whether the change removed it: need {need}",
                   next=step, fix=list(f.fix))


def after_fix(rec: Recording, before: Phase, after: Phase,
              before_rec: Recording | None = None) -> None:
    """Each finding of ``before`` with a cost (confirmed, or a lead): resolved in
    ``after`` by its own witness, still there, or not known yet (appended to
    ``after.earlier``; ``before`` read from ``before_rec`` when it is another
    recording)."""
    now = {f.cause: f for f in after.findings if f.confirmed}
    leads = {f.cause for f in after.findings if not f.confirmed}
    suspected = {f.cause: f for f in after.findings if f.explains_pct is not None}
    verdict = signal_verdict(rec, after.host, before, after, before_rec)
    added: list[Finding] = []
    for f in before.findings:
        if not (f.is_problem or f.is_lead):
            continue
        outcome = verdict
        if f.cause in rules.per_request_causes():  # declared on its rule
            outcome = per_request_verdict(rec, after.host, before, after, before_rec) or verdict
        # a lead is followed by its cause suspected again; a confirmed cause by its confirmation
        still = suspected.get(f.cause) if f.is_lead else now.get(f.cause)
        own = _own(f)
        taken = next((after.measured[w] for w in own if w in after.measured), None)
        retake: NextStep | None = None
        state: EarlierState
        if still is not None:
            shares = (f"{f.explains_pct:.0f} % → {still.explains_pct:.0f} % of the time, "
                      if f.explains_pct is not None and still.explains_pct is not None else "")
            text, state = f"{_name(f)}: still there — {shares}{outcome}", "still"
        elif taken is None or f.cause in leads:
            step = _retake(f, own)
            need = " or ".join(WITNESS_NAME.get(w, w) for w in own) or "its witness"
            todo = "Enter takes it" if step is not None else "waits for it"
            text = (f"{_name(f)}: not known yet — {need} not taken since the change "
                    f"({todo}); outcome: {outcome}")
            state = "unknown"
            retake = step
            if f.cause not in leads and f.cause not in now:
                added.append(not_known_lead(f, own, step))
        elif ARROW["regressed"] in outcome:  # gone, but the step got slower
            text = (f"{_name(f)}: no longer found by {taken.text()}, but the step got slower "
                    f"— {outcome}")
            state = "gone"
        else:
            text = f"{_name(f)}: resolved — {taken.text()} no longer finds it; outcome: {outcome}"
            state = "resolved"
        f.resolved = text if state == "resolved" else None
        after.earlier.append(Earlier(cause=f.cause, state=state, text=text,
                                     explains_pct=f.explains_pct, outcome=outcome, next=retake))
    if added:  # after the confirmed problems, before the other leads
        at = max((i + 1 for i, f in enumerate(after.findings) if f.is_problem), default=0)
        after.findings[at:at] = added
