"""Identical answers from many hosts folded into one, by node set (like
ClusterShell's ``clubak``): 64 hosts that all say "ok, 2.4.0" read as one
line ``node[01-64] (64)``, and the two that differ stand out.

Two probe results are the same answer when their verdict, exit status,
summary, stdout and stderr are equal; durations and probe ids never are,
so they are left out. Groups come largest first (then by their first host),
so the odd answers are at the bottom, where the eye ends.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from perftriage.core.fleet.nodeset import fold


@dataclass
class AnswerGroup:
    hosts: list[str]
    verdict: str
    exit_status: int | None
    summary: str
    stdout: str
    stderr: str
    probes: list = field(default_factory=list)  # the ProbeStates, in host order

    @property
    def nodeset(self) -> str:
        return fold(self.hosts)

    def record(self) -> dict:
        """The JSON shape of ``perftriage probe --all --group --json``."""
        return {"nodeset": self.nodeset, "count": len(self.hosts), "hosts": list(self.hosts),
                "verdict": self.verdict, "exit_status": self.exit_status,
                "summary": self.summary, "stdout": self.stdout, "stderr": self.stderr}


def answer_key(p) -> tuple:
    return (p.status, p.exit_status, p.summary, p.stdout, p.stderr)


def group_answers(probes: Iterable) -> list[AnswerGroup]:
    """Probe results (ProbeState-like: host, status, exit_status, summary,
    stdout, stderr) grouped by identical answer."""
    groups: dict[tuple, AnswerGroup] = {}
    for p in probes:
        key = answer_key(p)
        g = groups.get(key)
        if g is None:
            g = groups[key] = AnswerGroup([], p.status, p.exit_status, p.summary, p.stdout,
                                          p.stderr)
        g.hosts.append(p.host)
        g.probes.append(p)
    return sorted(groups.values(), key=lambda g: (-len(g.hosts), g.hosts[0]))
