"""A phase: one window of a host's recording (between server starts and
changes of the decode level), the findings taken from the evidence inside it,
what became of the phase before's findings and the witnesses taken inside it.

The data both sides read: :mod:`.phases` cuts a recording into phases and
:mod:`.after_fix` says what became of one phase's findings in the next.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perftriage.core.clock import clock
from perftriage.core.model.findings import Earlier, Finding
from perftriage.core.model.findings import top as top_of

WITNESS_NAME = {"capture": "a profile capture", "stacks": "a stacks record", "ncu": "ncu",
                "log": "the engine's log", "engine": "the engine's /metrics", "gap": "the gap",
                "nvml": "NVML", "host": "the host's CPU readings"}


@dataclass(frozen=True)
class Taken:
    """A witness taken inside a phase: what and when (for the text)."""
    witness: str
    at: float | None
    source: str = ""

    def text(self) -> str:
        what = f"{self.witness} {self.source}".strip() if self.source else WITNESS_NAME.get(
            self.witness, self.witness)
        return what + (f" at {clock(self.at)}" if self.at is not None else "")


@dataclass
class Phase:
    host: str
    start: float
    end: float
    findings: list[Finding]
    run_start: bool  # a new server process began at its start
    earlier: list[Earlier] = field(default_factory=list)  # the phase before's findings
    # the witnesses taken inside it (what can tell a finding of the phase before is gone)
    measured: dict[str, Taken] = field(default_factory=dict)

    @property
    def top(self) -> Finding | None:
        return top_of(self.findings)  # the one top() every reader uses

    def public(self) -> dict[str, Any]:
        top = self.top
        return {"from": round(self.start, 3), "to": round(self.end, 3), "host": self.host,
                "top": top.cause if top is not None else "",
                "findings": [f.public() for f in self.findings],
                "earlier": [e.public() for e in self.earlier]}
