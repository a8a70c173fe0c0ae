"""What the session knows about the checks on its hypotheses (built by the
reducer from ``check.verdict`` events, so replay shows the same verdicts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Verdict = Literal["supported", "refuted", "pending", "no data", "error"]
VERDICTS: tuple[Verdict, ...] = ("supported", "refuted", "pending", "no data", "error")
VERDICT_LOG_MAX = 2000  # changes kept per hypothesis (the transcript keeps all)


@dataclass
class ScopeVerdict:
    """The verdict of one scope ("node1 GPU 2", "node1", "engine:node1",
    "session") since ``since_t``, with the values that decided it."""

    verdict: Verdict
    since_t: float
    since_wall: float = 0.0
    values: dict[str, Any] = field(default_factory=dict)
    reason: str = ""


@dataclass
class VerdictChange:
    t: float
    wall: float
    scope: str
    verdict: Verdict
    values: dict[str, Any]
    reason: str


# precedence of the overall verdict: supported on any scope wins, then pending ...
_RANK = {"supported": 0, "pending": 1, "refuted": 2, "error": 3, "no data": 4}


def overall(verdicts: dict[str, ScopeVerdict]) -> Verdict | None:
    """The verdict over all scopes: supported if any scope supports it, else
    pending, refuted, error, no data in that order; None before the first."""
    if not verdicts:
        return None
    return min((v.verdict for v in verdicts.values()), key=_RANK.__getitem__)


def _scope_kind(scopes: list[str]) -> tuple[str, bool]:
    """("GPUs" | "hosts" | "engines" | "", whether every scope is on one host)."""
    if all(" GPU " in s for s in scopes):
        return "GPUs", len({s.split(" GPU ")[0] for s in scopes}) == 1
    if all(s.startswith("engine:") for s in scopes):
        return "engines", False
    return "hosts", False


def short_scope(scope: str, one_host: bool) -> str:
    return scope.split(" ", 1)[1] if one_host and " GPU " in scope else scope


def count_text(verdicts: dict[str, ScopeVerdict]) -> str:
    """``supported on 6/8 GPUs (GPU 2, 5 not)``; for one scope just the verdict
    (``refuted``); ``no data`` scopes are named with what is missing."""
    top = overall(verdicts)
    if top is None:
        return ""
    if len(verdicts) == 1:
        return top
    scopes = list(verdicts)
    kind, one_host = _scope_kind(scopes)
    hits = [s for s in scopes if verdicts[s].verdict == top]
    misses = [short_scope(s, one_host) for s in scopes if verdicts[s].verdict != top]
    text = f"{top} on {len(hits)}/{len(scopes)} {kind}"
    if misses and len(misses) <= 6:
        if one_host and kind == "GPUs":
            nums = [m.removeprefix("GPU ") for m in misses]
            text += f" (GPU {', '.join(nums)} not)"
        else:
            text += f" ({', '.join(misses)} not)"
    elif misses:
        text += f" ({len(misses)} not)"
    return text


VERDICT_ICON = {"supported": "✔", "refuted": "✘", "pending": "…", "no data": "?", "error": "!"}
# the status colour each verdict is drawn in (widgets/status_style.py's names)
VERDICT_STATUS = {"supported": "supported", "refuted": "refuted", "pending": "testing",
                  "no data": "parked", "error": "error"}


def verdict_cell(verdicts: dict[str, ScopeVerdict]) -> tuple[str, str] | None:
    """The pane's short form, ``✔ supported 6/8``, and the status to colour it
    by; None before the check's first verdict."""
    top = overall(verdicts)
    if top is None:
        return None
    hits = sum(1 for v in verdicts.values() if v.verdict == top)
    count = f" {hits}/{len(verdicts)}" if len(verdicts) > 1 else ""
    return f"{VERDICT_ICON[top]} {top}{count}", VERDICT_STATUS[top]


def check_lines(check: str, for_s: float, verdicts: dict[str, ScopeVerdict],
                log: list[VerdictChange], clock, max_scopes: int = 8,
                max_flips: int = 8) -> list[str]:
    """The check in words (unsanitised: the caller filters for its medium):
    the condition, its verdict over the scopes, each scope's reason, and the
    latest changes of verdict with the values that decided them."""
    head = f"check: {check}" + (f" (for {for_s:g} s)" if for_s else "")
    text = count_text(verdicts)
    out = [f"{head}: {text}" if text else f"{head}: not evaluated yet"]
    for scope, v in list(verdicts.items())[:max_scopes]:
        out.append(f"  {scope or 'check'}: {v.verdict} since {clock(v.since_t)}"
                   + (f" ({v.reason})" if v.reason else ""))
    if len(verdicts) > max_scopes:
        out.append(f"  ... {len(verdicts) - max_scopes} more scopes")
    flips = log[-max_flips:]
    if flips:
        out.append("  changes:" + ("" if len(log) <= max_flips else
                                   f" (last {max_flips} of {len(log)})"))
        for c in flips:
            out.append(f"    {clock(c.t)} {c.scope or 'check'} became {c.verdict}"
                       + (f" ({c.reason})" if c.reason else ""))
    return out
