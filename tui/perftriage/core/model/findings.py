"""The findings vocabulary, one for the whole house: a finding is one cause,
what it costs, the evidence for and against it, the next witness that would
confirm or refute it, and what to do about it. The triage's rules make them
(``core/triage``), the ``triage.updated`` event and the state hold them, the
UI, the report and the CLI show them, the checks and the simulator name
their causes from :data:`CAUSES`.

``explains_pct`` is the share of the decode step (of the time) the cause
accounts for, computed from the evidence; findings are ordered by it. It is
finite and within 0-100 whatever made it (a rule over hostile readings, a
transcript): a non-finite share is no share, a share out of range is
clamped. Severity bands are XProf's (moderate from 3 %, high from 15 % of
the step). A finding with ``confirmed`` False is "not enough evidence: need
X": its share is an upper bound read from the parent (the time the GPU idles
waiting for the host, the time above the floor), and ``next`` says which
witness would tell.

These are msgspec Structs, so a transcript line decodes straight into them
with strict types and bounds: a ``next`` that is a string, a ``fix`` that
is a number, a share that is text make the whole event unreadable (skipped
and counted by the reader), never a crash further in. Field order is the
public JSON shape (``perftriage triage --json``, docs/triage.md, written by
``public()``): ``cause, severity, title, explains_pct, evidence, against,
next, fix`` first, extras after. A transcript holds the same keys (its
order is the Struct's; a reader goes by name).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

import msgspec

from perftriage.core.shares import share

HIGH_PCT = 15.0  # XProf: a category at 15 % of the step or more is high
MODERATE_PCT = 3.0  # ... from 3 % moderate; below: not reported

# The causes (public ids, docs/triage.md): the one list. The checks' fields
# (``triage.CAUSE_pct``), the demo's scenarios and the docs derive from it.
CAUSES: tuple[str, ...] = (
    "host-stall", "launch-bound", "host-sync", "kernel-below-roofline",
    "wasted-traffic", "exposed-comm", "straggler", "kv-pressure", "gpu-memory-pressure",
    "queueing", "cpu-throttle", "gpu-throttle", "near-floor", "need-evidence")
NEED_EVIDENCE = "need-evidence"
# the causes a diagnosis can name (need-evidence says what to measure instead)
DIAGNOSES: tuple[str, ...] = tuple(c for c in CAUSES if c != NEED_EVIDENCE)

Severity = Literal["high", "moderate"]
# what is left above the floor is no problem to fix: never high, never "resolved"
INFORMATIONAL = frozenset({"near-floor"})
# the witnesses a next step runs (the cockpit's actions)
NextKind = Literal["stacks", "capture", "ncu", "log-search", "metrics", "gap"]
NEXT_KINDS: tuple[str, ...] = get_args(NextKind)
# what became of a finding of the phase before (``Earlier.state``)
EarlierState = Literal["resolved", "still", "gone", "unknown"]

# a time a reader can do arithmetic with (as events.Seconds)
_Seconds = Annotated[float, msgspec.Meta(ge=-1e10, le=1e10)]
# lists a transcript may hold: a real finding has a handful of each
_Items = msgspec.Meta(max_length=256)


class Evidence(msgspec.Struct, frozen=True):
    witness: str  # capture | stacks | ncu | gap | log | engine | nvml | host
    text: str
    at: _Seconds | None = None  # session seconds the witness was taken
    source: str = ""  # its id: prof3, p12, the log source, "gap"

    @property
    def label(self) -> str:
        """``capture prof3``; the witness alone where the source only repeats it."""
        return self.witness if self.source in ("", self.witness) else f"{self.witness} {self.source}"

    def public(self) -> dict[str, Any]:
        return {"witness": self.witness, "text": self.text,
                "at": None if self.at is None else round(self.at, 3), "source": self.source}


class NextStep(msgspec.Struct, frozen=True, omit_defaults=True):
    kind: NextKind
    # shown and recorded; never run (the cockpit rebuilds what runs:
    # services/triage/next_step.py)
    args: Annotated[list[str], msgspec.Meta(max_length=64)]
    why: str
    # an ncu step's kernels, as this triage read them from a capture: what the
    # cockpit builds its --kernel regex from (services/triage/next_step.py)
    kernels: Annotated[tuple[str, ...], msgspec.Meta(max_length=64)] = ()

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "args": list(self.args), "why": self.why}
        if self.kernels:
            out["kernels"] = list(self.kernels)
        return out


class Finding(msgspec.Struct):
    """One cause. ``severity`` is derived (from the cause and the share),
    stored so the JSON carries it, kept right on every assignment; a
    recorded one is never believed. Fields in the order the triage's rules
    give them (``Finding(cause, title, share, ...)``); :meth:`public` writes
    the public order."""

    cause: str
    title: str
    explains_pct: float | None
    evidence: Annotated[list[Evidence], _Items] = []
    against: Annotated[list[Evidence], _Items] = []
    next: NextStep | None = None
    fix: Annotated[list[str], _Items] = []
    host: str = ""
    confirmed: bool = True
    # after a fix: "resolved — decode 936 → 2,900 tok/s ▲, p < 0.001" (set by phases)
    resolved: str | None = None
    severity: Severity = "moderate"

    def __post_init__(self) -> None:
        self.explains_pct = self.explains_pct  # bounded, severity derived (below)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "explains_pct":
            value = share(value)
        super().__setattr__(name, value)
        if name in ("explains_pct", "cause"):
            super().__setattr__("severity", _severity(self.cause, self.explains_pct))

    @property
    def is_lead(self) -> bool:
        """A suspected cause with a share, not confirmed yet (kernels below their
        roofline before ncu): after a fix it too is "resolved" or "still there"."""
        return (not self.confirmed and self.explains_pct is not None
                and self.cause not in INFORMATIONAL and self.cause != NEED_EVIDENCE)

    @property
    def is_problem(self) -> bool:
        """A cause with a cost (what a fix can resolve), not a remark or a lead."""
        return self.confirmed and self.explains_pct is not None and self.cause not in INFORMATIONAL

    def line(self) -> str:
        """One line: ``high · host-stall · 42 % · the host's Python ...``."""
        pct_ = "" if self.explains_pct is None else f" · {self.explains_pct:.0f} %"
        return f"{self.severity} · {self.cause}{pct_} · {self.title}"

    def public(self) -> dict[str, Any]:
        return {"cause": self.cause, "severity": self.severity, "title": self.title,
                "explains_pct": None if self.explains_pct is None else round(self.explains_pct, 1),
                "evidence": [e.public() for e in self.evidence],
                "against": [e.public() for e in self.against],
                "next": None if self.next is None else self.next.public(),
                "fix": list(self.fix), "host": self.host, "confirmed": self.confirmed,
                "resolved": self.resolved}


def _severity(cause: str, pct_: float | None) -> Severity:
    if cause in INFORMATIONAL:
        return "moderate"
    return "high" if (pct_ or 0.0) >= HIGH_PCT else "moderate"


class Earlier(msgspec.Struct, kw_only=True):
    """The earlier-phase line: what became of a finding of the phase before
    (a restart, a change of level) or of the baseline's window."""

    cause: str
    state: EarlierState
    text: str
    explains_pct: float | None = None
    # the before/after verdict beside it (the change's outcome, not the cause's)
    outcome: str = ""
    # not known yet: the step that takes its witness again (Enter)
    next: NextStep | None = None
    vs: str = ""  # "the phase before" | "the baseline" (the live triage says which)

    def __post_init__(self) -> None:
        self.explains_pct = share(self.explains_pct)

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cause": self.cause, "explains_pct": self.explains_pct}
        if self.outcome:
            out["outcome"] = self.outcome
        if self.next is not None:
            out["next"] = self.next.public()
        out.update(state=self.state, text=self.text)
        if self.vs:
            out["vs"] = self.vs
        return out


def reportable(f: Finding) -> bool:
    """Worth showing: at least the moderate band, an unconfirmed lead with no
    share yet (it says what to measure), or a remark (near-floor: at the floor
    itself nothing is left, and that is the answer, not an empty list)."""
    return f.explains_pct is None or f.cause in INFORMATIONAL or f.explains_pct >= MODERATE_PCT


def ranked(findings: list[Finding]) -> list[Finding]:
    """By share of the step, largest first; a confirmed finding before a lead
    of the same share, a lead without a share last; and the :func:`top` first
    (a problem before a larger remark or lead), so every list shown starts
    with the finding every reader calls the top."""
    keep = [f for f in findings if reportable(f)]
    # without a share, a lead (what to measure next) before a confirmed remark,
    # and among leads the free one first: the gap (G) costs nothing and tells
    # wasted-traffic from near-floor before a HEAVY ncu is asked for
    out = sorted(keep, key=lambda f: (f.explains_pct is None, -(f.explains_pct or 0.0),
                                      f.confirmed == (f.explains_pct is None),
                                      f.next is None or f.next.kind != "gap", f.cause))
    first = top(out)
    if first is not None and out[0] is not first:
        out.remove(first)
        out.insert(0, first)
    return out


def top(findings: list[Finding]) -> Finding | None:
    """THE top finding of a ranked list, for every reader (the main screen's
    triage line, the Triage view, the report, ``triage --json``, ``replay
    --json``): the first problem (confirmed, with a share, not a remark such
    as near-floor), else the first finding (a lead: what to measure next)."""
    return next((f for f in findings if f.is_problem), findings[0] if findings else None)


def pct(x: float) -> str:
    return f"{x:.0f} %" if x >= 1 else f"{x:.1f} %"
