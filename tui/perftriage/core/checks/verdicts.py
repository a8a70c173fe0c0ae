"""Turn checks into verdicts, once a tick, per scope -- like a Prometheus
alerting rule: the condition true for less than ``for`` is *pending*, for
``for`` or longer *supported*; false is *refuted*; a signal missing or stale
is *no data* (saying which); a check that cannot be evaluated is *error*.

:class:`Evaluator` is pure apart from its own memory (how long each
condition has held, a short history per signal for ``avg``/``max``/``min``/
``rate``): it reads the session state and returns a ``check.verdict`` event
for every scope whose verdict changed. The cockpit emits those live; the
``check`` command runs the same evaluator over a replayed transcript.
"""

from __future__ import annotations

import fnmatch
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from perftriage.core.checks.catalogue import SCOPE_ORDER, Scope, Signal
from perftriage.core.checks.expr import (
    MAX_WINDOW_S,
    Check,
    CheckError,
    HistoryRef,
    compile_check,
    parse_duration,
)
from perftriage.core.checks.signals import Missing, ScopeKey, SignalTable
from perftriage.core.model import events as ev
from perftriage.core.model.check_state import Verdict
from perftriage.core.model.state import SessionState


@dataclass(frozen=True)
class Compiled:
    check: Check
    scope: Scope
    pattern: str | None  # only hosts / engines whose name matches (fnmatch)


def compile_scoped(text: str, scope: str = "") -> Compiled:
    """Compile ``text`` in ``scope`` ("" = the finest its signals need; or gpu,
    host, engine, session, optionally ``:PATTERN``); CheckError otherwise.
    The position of a scope error is that of the first signal it rules out."""
    check = compile_check(text)
    kind, _, pattern = scope.partition(":")
    kind = kind.strip() or check.scope
    if kind not in SCOPE_ORDER:
        raise CheckError(f"scope {scope!r}: use gpu, host, engine or session "
                         "(optionally :PATTERN)", 0)
    if SCOPE_ORDER.index(kind) > SCOPE_ORDER.index(check.scope):
        needs = next((str(sig) for sig in check.signals if sig.scope == check.scope),
                     check.scope)
        raise CheckError(f"{needs} is per {check.scope}: the scope must be {check.scope}, "
                         f"not {kind}", 0)
    return Compiled(check, kind, pattern.strip() or None)  # type: ignore[arg-type]


def for_seconds(value: Any) -> float:
    """A ``for`` of a pack or form: "10s", "2m", a number of seconds, or empty."""
    if value in (None, ""):
        return 0.0
    if isinstance(value, bool):
        raise ValueError("for must be a duration like \"10s\"")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        try:
            seconds = float(str(value))  # a bare number is seconds
        except ValueError:
            seconds = parse_duration(str(value))
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(f"for must be a duration of 0 s or more, not {value!r}")
    return seconds


@dataclass
class _Slot:
    """One (hypothesis, scope): its verdict, since when the condition has held,
    and what the check read there at the last tick."""

    verdict: Verdict | None = None
    active_since: float | None = None
    check: Check | None = None
    # what it read at the last tick: the check's columns and this scope's row in them
    columns: list[tuple[str, list[Any]]] | None = None
    row: int = 0


def _rounded(v: Any) -> Any:
    return round(v, 4) if isinstance(v, float) else v


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return f"{v:.4g}"
    return repr(v) if isinstance(v, str) else str(v)


def values_text(values: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {_fmt(v)}" for k, v in values.items())


@dataclass
class Evaluator:
    """Keeps, between ticks, how long each (hypothesis, scope) condition has
    held and a short history of the signals that history functions read."""

    _compiled: dict[tuple[str, str], Compiled | CheckError] = field(default_factory=dict)
    # (hyp_id, check text) -> scope label -> its slot ("" = the check as a whole)
    _slots: dict[tuple[str, str], dict[str, _Slot]] = field(default_factory=dict)
    _history: dict[tuple[str, str], deque[tuple[float, Any]]] = field(default_factory=dict)

    def values(self, hyp_id: str, text: str, scope: str) -> dict[str, Any] | None:
        """What the check read on ``scope`` at the last tick, by signal
        (``{"gap.traffic_ratio": 2.02}``); None if it was not evaluated there."""
        slot = self._slots.get((hyp_id, text), {}).get(scope)
        if slot is None or slot.check is None or slot.columns is None:
            return None
        shown, i = slot.check.shown, slot.row
        return {shown[n]: _rounded(vals[i]) for n, vals in slot.columns
                if type(vals[i]) is not Missing}

    def compiled(self, text: str, scope: str) -> Compiled | CheckError:
        key = (text, scope)
        got = self._compiled.get(key)
        if got is None:
            try:
                got = compile_scoped(text, scope)
            except CheckError as exc:
                got = exc
            self._compiled[key] = got
        return got

    def tick(self, state: SessionState, now: float) -> list[ev.CheckVerdict]:
        """Evaluate every hypothesis's check at session time ``now``; the
        events for the verdicts that changed (t = ``now``)."""
        table = SignalTable(state, now)
        out: list[ev.CheckVerdict] = []
        scopes_of: dict[Scope, list[ScopeKey]] = {}
        if len(self._slots) > len(state.hypotheses):  # deleted hypotheses, changed checks
            live = {(h.hyp_id, h.check) for h in state.hypotheses}
            for key in [k for k in self._slots if k not in live]:
                del self._slots[key]
        for h in state.hypotheses:
            if not h.check:
                continue
            slots = self._slots.get((h.hyp_id, h.check))
            if slots is None:
                slots = self._slots[(h.hyp_id, h.check)] = {}
            comp = self.compiled(h.check, h.scope)
            if isinstance(comp, CheckError):
                self._settle(out, h.hyp_id, h.check, "", slots, "error", now, str(comp))
                continue
            scopes = scopes_of.get(comp.scope)
            if scopes is None:
                scopes = scopes_of[comp.scope] = table.scopes(comp.scope)
            if comp.pattern is not None:
                scopes = [s for s in scopes if fnmatch.fnmatchcase(s.engine or s.host or "",
                                                                    comp.pattern)]
            if not scopes:  # "": the check as a whole, until it has a place to run
                self._settle(out, h.hyp_id, h.check, "", slots, "no data", now,
                             f"no {comp.scope} to evaluate on yet")
                continue
            slots.pop("", None)
            self._scopes(out, table, h.hyp_id, h.check, h.for_s, comp, scopes, slots, now)
        return out

    def _scopes(self, out: list[ev.CheckVerdict], table: SignalTable, hyp_id: str, text: str,
                for_s: float, comp: Compiled, scopes: list[ScopeKey], slots: dict[str, _Slot],
                now: float) -> None:
        """The check on each scope: the hot loop (200 checks x 64 GPUs a second).
        Where every scope has every value, the check runs once over the columns
        (``fast.build_columns``); otherwise, or if that raises, once per scope."""
        check = comp.check
        # each reference's value on every scope of the kind, read once for all checks
        columns = [(name, self._column(table, ref, comp.scope, now))
                   for name, ref in check.refs.items()]
        index = table.index(comp.scope)
        n = len(index)
        results: list[Any] | None = None
        if check.vector is not None and not any(Missing in table.kinds[id(vals)]
                                                for _, vals in columns):
            try:
                results = check.vector(dict(columns), n)
            except Exception:  # noqa: BLE001 - the per-scope path says which scope and why
                results = None
        fast = check.fast
        for scope in scopes:
            label = scope.label
            i = index[label]
            slot = slots.get(label)
            if slot is None:
                slot = slots[label] = _Slot(check=check)
            slot.columns, slot.row = columns, i
            if results is not None:
                result = results[i]
            else:
                names: dict[str, Any] = {}
                missing: list[str] | None = None
                for name, vals in columns:
                    v = vals[i]
                    if type(v) is Missing:
                        missing = [*(missing or ()), v.reason]
                    else:
                        names[name] = v
                if missing:
                    self._settle(out, hyp_id, text, label, slots, "no data", now,
                                 "; ".join(missing))
                    continue
                try:
                    result = fast(names)  # plain values only: the table hands out nothing else
                except Exception as exc:  # a check's own failure (1/0) is its verdict
                    self._settle(out, hyp_id, text, label, slots, "error", now,
                                 f"{type(exc).__name__}: {exc}")
                    continue
            if result is False:
                slot.active_since = None
                if slot.verdict != "refuted":
                    self._settle(out, hyp_id, text, label, slots, "refuted", now)
                continue
            if result is not True:
                self._settle(out, hyp_id, text, label, slots, "error", now,
                             f"the check gives {_fmt(result)}, not true/false")
                continue
            if slot.active_since is None:
                slot.active_since = now
            held = now - slot.active_since
            if held >= for_s:
                if slot.verdict != "supported":
                    self._settle(out, hyp_id, text, label, slots, "supported", now,
                                 f" (true for {held:.0f} s)" if for_s else "")
            elif slot.verdict != "pending":
                self._settle(out, hyp_id, text, label, slots, "pending", now,
                             f"true for {held:.0f} s of {for_s:g} s: ")

    def _settle(self, out: list[ev.CheckVerdict], hyp_id: str, text: str, scope: str,
                slots: dict[str, _Slot], verdict: Verdict, now: float, words: str = "") -> None:
        """Record ``verdict``; an event only when it changed. The reason is
        built then, not every tick: the values read (supported, refuted), with
        ``words`` after (supported) or before (pending), or ``words`` alone."""
        slot = slots.get(scope)
        if slot is None:
            slot = slots[scope] = _Slot()
        if verdict != "supported" and verdict != "pending":
            slot.active_since = None
        if slot.verdict == verdict:
            return
        slot.verdict = verdict
        values = self.values(hyp_id, text, scope) or {}
        if verdict == "supported":
            reason = values_text(values) + words
        elif verdict == "pending":
            reason = words + values_text(values)
        elif verdict == "refuted":
            reason = values_text(values)
        else:
            reason = words
        out.append(ev.CheckVerdict(t=now, hyp_id=hyp_id, scope=scope, verdict=verdict,
                                   check=text, values=values, reason=reason))

    # --- reading -------------------------------------------------------------------------

    def _column(self, table: SignalTable, ref: Any, kind: Scope, now: float) -> list[Any]:
        """``ref``'s value (or Missing) on every scope of ``kind`` at this tick, in
        the order of ``table.scopes(kind)``; read once per tick whatever the
        number of checks reading it. ``table.kinds`` notes the value types in it."""
        key = (id(ref), kind)
        column = table.columns.get(key)
        if column is None:
            if type(ref) is Signal:
                column = [table.read(ref, scope) for scope in table.scopes(kind)]
            elif type(ref) is HistoryRef:
                column = [self._history_value(table, ref, scope, now)
                          for scope in table.scopes(kind)]
            else:
                column = [table.spread(ref, scope) for scope in table.scopes(kind)]
            table.columns[key] = column
            table.kinds[id(column)] = {type(v) for v in column}
        return column

    # --- history ---------------------------------------------------------------------------

    def _history_value(self, table: SignalTable, ref: HistoryRef, scope: ScopeKey,
                       now: float) -> Any:
        key = (str(ref.signal), scope.label)
        points = self._history.get(key)
        if points is None:
            points = self._history[key] = deque()
        current = table.read(ref.signal, scope)
        if not isinstance(current, Missing) and not isinstance(current, bool) \
                and isinstance(current, int | float) and (not points or points[-1][0] < now):
            points.append((now, current))
        while points and points[0][0] < now - MAX_WINDOW_S:
            points.popleft()
        window = [(t, v) for t, v in points if t > now - ref.seconds]  # (now - w, now]
        if not window:
            reason = current.reason if isinstance(current, Missing) else f"{ref.signal} not a number"
            return Missing(f"{ref}: no reading in the window ({reason})")
        values = [v for _, v in window]
        if ref.fn == "avg":
            return sum(values) / len(values)
        if ref.fn == "max":
            return max(values)
        if ref.fn == "min":
            return min(values)
        (t0, v0), (t1, v1) = window[0], window[-1]
        if t1 <= t0:
            return Missing(f"{ref}: needs two readings in the window")
        return (v1 - v0) / (t1 - t0)
