"""A finding: one cause, what it costs, the evidence for and against it, the
next witness that would confirm or refute it, and what to do about it.

``explains_pct`` is the share of the decode step (of the time) the cause
accounts for, computed from the evidence; findings are ordered by it.
Severity bands are XProf's (moderate from 3 %, high from 15 % of the step).
A finding with ``confirmed`` False is "not enough evidence: need X": its
share is an upper bound read from the parent (the time the GPU idles
waiting for the host, the time above the floor), and ``next`` says which
witness would tell. Field order is the public JSON shape (``perftriage
triage --json``): ``cause, severity, title, explains_pct, evidence,
against, next, fix`` first, extras after.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

HIGH_PCT = 15.0  # XProf: a category at 15 % of the step or more is high
MODERATE_PCT = 3.0  # ... from 3 % moderate; below: not reported

# the causes (public ids, docs/triage.md)
CAUSES = ("host-stall", "launch-bound", "host-sync", "kernel-below-roofline",
          "wasted-traffic", "exposed-comm", "straggler", "kv-pressure", "queueing",
          "cpu-throttle", "gpu-throttle", "near-floor", "need-evidence")

Severity = Literal["high", "moderate"]
# what is left above the floor is no problem to fix: never high, never "resolved"
INFORMATIONAL = frozenset({"near-floor"})
# the witnesses a next step runs (the cockpit's actions)
NextKind = Literal["stacks", "capture", "ncu", "log-search", "metrics", "gap"]


@dataclass(frozen=True)
class Evidence:
    witness: str  # capture | stacks | ncu | gap | log | engine | nvml | host
    text: str
    at: float | None = None  # session seconds the witness was taken
    source: str = ""  # its id: prof3, p12, the log source, "gap"

    @property
    def label(self) -> str:
        """``capture prof3``; the witness alone where the source only repeats it."""
        return self.witness if self.source in ("", self.witness) else f"{self.witness} {self.source}"

    def public(self) -> dict[str, Any]:
        return {"witness": self.witness, "text": self.text,
                "at": None if self.at is None else round(self.at, 3), "source": self.source}


@dataclass(frozen=True)
class NextStep:
    kind: NextKind
    args: list[str]  # shown and recorded; never run (the cockpit rebuilds what runs)
    why: str
    # an ncu step's kernels, as this triage read them from a capture: what the
    # cockpit builds its --kernel regex from (services/triage/next_step.py)
    kernels: tuple[str, ...] = ()

    def public(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "args": list(self.args), "why": self.why}
        if self.kernels:
            out["kernels"] = list(self.kernels)
        return out


@dataclass
class Finding:
    cause: str
    title: str
    explains_pct: float | None
    evidence: list[Evidence] = field(default_factory=list)
    against: list[Evidence] = field(default_factory=list)
    next: NextStep | None = None
    fix: list[str] = field(default_factory=list)
    host: str = ""
    confirmed: bool = True
    # after a fix: "resolved — decode 936 → 2,900 tok/s ▲, p < 0.001" (set by phases)
    resolved: str | None = None

    @property
    def severity(self) -> Severity:
        pct = self.explains_pct or 0.0
        if self.cause in INFORMATIONAL:
            return "moderate"
        return "high" if pct >= HIGH_PCT else "moderate"

    @property
    def is_lead(self) -> bool:
        """A suspected cause with a share, not confirmed yet (kernels below their
        roofline before ncu): after a fix it too is "resolved" or "still there"."""
        return (not self.confirmed and self.explains_pct is not None
                and self.cause not in INFORMATIONAL and self.cause != "need-evidence")

    @property
    def is_problem(self) -> bool:
        """A cause with a cost (what a fix can resolve), not a remark or a lead."""
        return self.confirmed and self.explains_pct is not None and self.cause not in INFORMATIONAL

    def line(self) -> str:
        """One line: ``high · host-stall · 42 % · the host's Python ...``."""
        pct = "" if self.explains_pct is None else f" · {self.explains_pct:.0f} %"
        return f"{self.severity} · {self.cause}{pct} · {self.title}"

    def public(self) -> dict[str, Any]:
        return {"cause": self.cause, "severity": self.severity, "title": self.title,
                "explains_pct": None if self.explains_pct is None else round(self.explains_pct, 1),
                "evidence": [e.public() for e in self.evidence],
                "against": [e.public() for e in self.against],
                "next": None if self.next is None else self.next.public(),
                "fix": list(self.fix), "host": self.host, "confirmed": self.confirmed,
                "resolved": self.resolved}


def reportable(f: Finding) -> bool:
    """Worth showing: at least the moderate band, or an unconfirmed lead with
    no share yet (it says what to measure)."""
    return f.explains_pct is None or f.explains_pct >= MODERATE_PCT


def ranked(findings: list[Finding]) -> list[Finding]:
    """By share of the step, largest first; a confirmed finding before a lead
    of the same share, a lead without a share last."""
    keep = [f for f in findings if reportable(f)]
    # without a share, a lead (what to measure next) before a confirmed remark
    return sorted(keep, key=lambda f: (f.explains_pct is None, -(f.explains_pct or 0.0),
                                       f.confirmed == (f.explains_pct is None), f.cause))


def pct(x: float) -> str:
    return f"{x:.0f} %" if x >= 1 else f"{x:.1f} %"
