"""Evaluate a hypothesis pack against a saved transcript, after the fact.

The transcript's events go through the reducer in order; once a second of
session time the same :class:`~perftriage.core.checks.verdicts.Evaluator`
the cockpit runs live looks at the state, exactly as it would have then.
The result is what ``perftriage check --json`` prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from perftriage.core.checks.pack import PackHypothesis
from perftriage.core.checks.verdicts import Evaluator
from perftriage.core.model import events as ev
from perftriage.core.model.check_state import overall
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState

TICK_S = 1.0
ID_PREFIX = "pack"  # the pack's hypotheses, beside any the session has itself


def _ids(pack: Sequence[PackHypothesis]) -> list[str]:
    return [f"{ID_PREFIX}{i}" for i in range(1, len(pack) + 1)]


def evaluate(events: Iterable[ev.Event], pack: Sequence[PackHypothesis],
             state: SessionState | None = None, at: float | None = None) -> dict[str, Any]:
    """``{hypotheses: [{title, check, verdict, scopes: [{scope, verdict, value, reason}],
    spans: [{from, to, verdict}]}]}`` at session time ``at`` (None: the end).
    ``verdict`` is the verdict over all scopes (supported if any scope
    supports it; null for a hypothesis without a check); ``value`` the
    values the check read there at that moment (one signal: its value; more:
    ``{signal: value}``); ``spans`` the overall verdict's history in session
    seconds."""
    state = state or SessionState()
    ids = _ids(pack)
    evaluator = Evaluator()
    history: dict[str, list[list[Any]]] = {i: [] for i in ids}  # [from, to, verdict]
    added = False
    next_tick: float | None = None
    last_t = 0.0

    def tick(now: float) -> None:
        for change in evaluator.tick(state, now):
            apply(state, change)
        for hyp_id in ids:
            h = state.hypothesis(hyp_id)
            verdict = overall(h.verdicts) if h is not None and h.check else None
            spans = history[hyp_id]
            if verdict is None:
                continue
            if spans and spans[-1][2] == verdict:
                spans[-1][1] = now
            else:
                if spans:
                    spans[-1][1] = now
                spans.append([now, now, verdict])

    for e in events:
        if at is not None and e.t > at:
            break
        if not added:  # the pack joins at the first event's moment
            for hyp_id, h in zip(ids, pack, strict=True):
                apply(state, ev.HypothesisAdded(t=e.t, hyp_id=hyp_id, title=h.title, note=h.note,
                                                check=h.check, for_s=h.for_s, scope=h.scope))
            added = True
            next_tick = e.t + TICK_S
        if isinstance(e, ev.CheckVerdict) and e.hyp_id.startswith(ID_PREFIX):
            continue  # a session's own events never speak for the pack
        while next_tick is not None and e.t >= next_tick:
            tick(next_tick)
            next_tick += TICK_S
        apply(state, e)
        last_t = max(last_t, e.t)
    end = at if at is not None else last_t
    if added and next_tick is not None:
        while next_tick <= end:
            tick(next_tick)
            next_tick += TICK_S
        tick(end)  # the verdict exactly at the end (or at T)
    return {"hypotheses": [_entry(state, evaluator, hyp_id, h, history[hyp_id])
                           for hyp_id, h in zip(ids, pack, strict=True)]}


def _entry(state: SessionState, evaluator: Evaluator, hyp_id: str, h: PackHypothesis,
           spans: list[list[Any]]) -> dict[str, Any]:
    hyp = state.hypothesis(hyp_id)
    verdicts = hyp.verdicts if hyp is not None and h.check else {}
    scopes = []
    for scope, v in verdicts.items():
        values = evaluator.values(hyp_id, h.check, scope)
        values = v.values if values is None else values
        value: Any = next(iter(values.values())) if len(values) == 1 else (values or None)
        scopes.append({"scope": scope or "all", "verdict": v.verdict, "value": value,
                       # what was missing (the values at a change are stale by now)
                       "reason": v.reason if v.verdict in ("no data", "error") else ""})
    return {
        "title": h.title,
        "check": h.check,
        "verdict": overall(verdicts) if h.check else None,
        "scopes": scopes,
        "spans": [{"from": round(a, 3), "to": round(b, 3), "verdict": v} for a, b, v in spans],
    }
