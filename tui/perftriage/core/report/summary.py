"""The report's summary: at most :data:`MAX_LINES` lines to paste into a team
channel — the investigation's story in one line (each cause it found, with
its share, and what became of it after the change; then the decode rate
from the first steady phase to the last, with its p), what is left, the
hosts, the span and where the full report is. ``perftriage report NAME
--summary`` prints it; every report starts with it.

The story is the investigation's, not one phase's: a recording that fixed
its launch-bound first minutes and ended faster leads with that fix and its
outcome, not with the launch-bound of the first minutes.

Plain text reads right too: recorded names go into code spans (never a
backslash escape), figures and words stay prose.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from perftriage.core.compare.recording import Recording
from perftriage.core.model.findings import NEED_EVIDENCE, Finding, top
from perftriage.core.model.state import SessionState
from perftriage.core.report.md_text import code
from perftriage.core.triage.after_fix import signal_verdict
from perftriage.core.triage.phase import Phase
from perftriage.core.triage.phases import steady
from perftriage.core.view.finding_parts import finding_parts

MAX_LINES = 20
STATE_WORDS = {"resolved": "resolved", "still": "still there", "gone": "gone (slower)",
               "unknown": "not known yet"}


def prose(text: str) -> str:
    """A finding's words as Markdown that reads right as plain text: its
    `quoted` names as code spans, and any other stretch that Markdown would
    read as markup (``[ ] < > | \\``) as a code span too — never a backslash
    escape."""
    out = []
    for i, part in enumerate(str(text).replace("\n", " ").split("`")):
        if not part:
            continue
        if i % 2:
            out.append(code(part))
            continue
        out.append(" ".join(code(w) if any(c in w for c in MARKUP) else w
                            for w in part.split(" ")))
    return "".join(out)


MARKUP = "[]<>|\\*_`"


def _cause(f: Finding) -> str:
    """``launch-bound (85 %)``, ``kernel-below-roofline (a lead, 48 %)``: the
    finding's parts, said short (core/view/finding_parts.py)."""
    return finding_parts(f).short


def story_host(phases: list[Phase]) -> str | None:
    """The host whose phases tell the most: most phases with a finding, then
    the most after-a-change lines."""
    hosts: dict[str, tuple[int, int]] = {}
    for p in phases:
        n, e = hosts.get(p.host, (0, 0))
        hosts[p.host] = (n + bool(_top(p)), e + len(p.earlier))
    return max(hosts, key=lambda h: hosts[h]) if hosts else None


def _top(p: Phase) -> Finding | None:
    return top([f for f in p.findings if f.cause != NEED_EVIDENCE])


def story(rec: Recording | None, phases: list[Phase], host: str) -> str:
    """``launch-bound (85 %) → resolved; then kernel-below-roofline (a lead)
    (48 %) · decode 892 → 9,656 tok/s, 10.8× faster, p < 0.001``."""
    mine = steady([p for p in phases if p.host == host])
    steps: list[str] = []
    told: set[str] = set()
    for i, p in enumerate(mine):
        f = _top(p)
        if f is None or f.cause in told:
            continue
        told.add(f.cause)
        after = next((e for q in mine[i + 1:] for e in q.earlier if e.cause == f.cause), None)
        steps.append(_cause(f) + (f" → {STATE_WORDS.get(after.state, after.state)}"
                                  if after is not None else ""))
    text = "; then ".join(steps) or "nothing above 3 % of the time"
    if rec is not None and len(mine) > 1:
        outcome = signal_verdict(rec, host, mine[0], mine[-1])
        factor = _factor(rec, host, mine[0], mine[-1])
        if "→" in outcome:
            parts = outcome.split(", ", 1)
            if factor and not outcome.startswith("decode"):  # the factor is the decode rate's
                factor = ", decode" + factor.removeprefix(",")
            text += f" · {parts[0]}{factor}" + (f", {parts[1]}" if len(parts) > 1 else "")
    return text


def _factor(rec: Recording, host: str, a: Phase, b: Phase) -> str:
    series = rec.series.get(("decode_tps", host, -1)) or rec.series.get(
        ("engine_gen_tps", host, -1))
    if series is None:
        return ""
    _, before = series.per_second(a.start, a.end)
    _, after = series.per_second(b.start, b.end)
    if not before or not after or statistics.median(before) <= 0:
        return ""
    x = statistics.median(after) / statistics.median(before)
    if x >= 1.05:
        return f", {x:.1f}× faster"
    return f", {1 / x:.1f}× slower" if x <= 0.95 else ""


def left(phases: list[Phase], host: str) -> str:
    """The last phase's top finding of ``host``: what is left to do."""
    mine = [p for p in phases if p.host == host]
    if not mine:
        return "nothing measured"
    f = _top(mine[-1])
    if f is None:
        return "nothing above 3 % of the time"
    return f"{_cause(f)}: {prose(f.title)}"


def hosts_line(state: SessionState, names: list[str]) -> str:
    """Hosts that agree (the same GPUs) once: ``gpu-[a,b]: 8 × NVIDIA H200``."""
    groups: dict[str, list[str]] = {}
    for name in names:
        hs = state.hosts.get(name)
        gpus = hs.gpus if hs is not None else []
        kinds: dict[str, int] = {}
        for g in gpus:
            kinds[g.name or "GPU"] = kinds.get(g.name or "GPU", 0) + 1
        what = ", ".join(f"{n} × {k}" for k, n in kinds.items()) or "no GPU"
        groups.setdefault(what, []).append(name)
    return "; ".join(f"{', '.join(code(n) for n in hosts)}: {code(what)}"
                     if what != "no GPU" else f"{', '.join(code(n) for n in hosts)}: no GPU"
                     for what, hosts in groups.items()) or "none"


def summary_lines(state: SessionState, rec: Recording | None, phases: list[Phase], *,
                  name: str, hosts: list[str], duration: str, full: str,
                  clock: Callable[[float | None], str]) -> list[str]:
    """At most :data:`MAX_LINES` lines of Markdown that read right as plain text."""
    host = story_host(phases)
    out = [f"**{code(name)}**", ""]
    if host is None:
        out.append("- Story: no finding (no decode rate, GPU readings or capture recorded)")
    else:
        out.append(f"- Story on {code(host)}: {story(rec, phases, host)}")
        out.append(f"- Left: {left(phases, host)}")
    names = list(dict.fromkeys([*hosts, *state.hosts]))
    out.append(f"- Hosts and GPUs: {hosts_line(state, names)}")
    restarts = sum(1 for p in phases if p.run_start and p.host == host)
    out.append(f"- Span: {duration}, {len([p for p in phases if p.host == host])} phase(s)"
               + (f", {restarts} restart(s)" if restarts else "")
               + (f", started {state.started_at}" if state.started_at else ""))
    out.append(f"- Full report: {full}")
    return [line[:400] for line in out][:MAX_LINES] + [""]
