"""The live triage as Text: the top finding in one line (the main screen,
the Gap view's verdict), the earlier phase's lines and what became of a
finding's step (the Triage view); a finding itself is its parts' Rich skin
(ui/widgets/finding_rich.py).

Everything comes from the state's ``triage.updated`` events (typed
findings, core/model/findings.py), so live, replay and ``watch`` say the
same; the top finding is the vocabulary's one ``top()``. A finding's title and evidence carry remote text (frames,
kernels, hosts, log lines): they become ``Text`` through the sanitizer,
never markup.
"""

from __future__ import annotations

from rich.text import Text

from perftriage.core.model import events as ev
from perftriage.core.model.findings import Earlier, Finding, top
from perftriage.core.model.state import SessionState
from perftriage.core.clock import clock
from perftriage.core.sanitize import visible
from perftriage.core.view.finding_parts import finding_parts
from perftriage.ui.widgets.finding_rich import head_text

KEY = "Y"  # the Triage view's key (ui/app.py)


def host_order(state: SessionState) -> list[str]:
    """Hosts by their top problem's share, largest first."""
    def weight(host: str) -> tuple[bool, float]:
        got = top(state.triage[host].findings)
        problem = got is not None and got.is_problem
        return (not problem, -(got.explains_pct or 0.0) if got is not None and problem else 0.0)

    return sorted(state.triage, key=lambda h: (*weight(h), h))


def top_finding(state: SessionState, host: str | None = None) -> tuple[str, Finding] | None:
    """(host, finding): the top problem (of ``host``, else of every host),
    else the first host's top (a lead: what to measure next)."""
    hosts = [host] if host is not None else host_order(state)
    best: tuple[str, Finding] | None = None
    for h in hosts:
        e = state.triage.get(h)
        got = None if e is None else top(e.findings)
        if got is None:
            continue
        if got.is_problem:
            return h, got
        if best is None:
            best = (h, got)
    return best


DOWN_STYLE = "bold red"


def server_down(state: SessionState, host: str | None = None) -> tuple[str, str] | None:
    """(host, what) when the server behind ``host`` (any host when None) is
    not running: a ``[[servers]]`` run that exited, failed or was stopped
    (with its exit status), else an engine whose ``/metrics`` stopped
    answering. Its findings then describe a server that is gone: an idle
    GPU is no cause to chase."""
    last: dict[str, ev.ServerEvent] = {}
    for e in state.server_events:
        last[e.server] = e
    for e in reversed(list(last.values())):
        if (host is None or e.host == host) and e.state in ("exited", "failed", "stopped"):
            said = {"exited": "exited", "failed": "failed to start", "stopped": "stopped"}[e.state]
            why = f" ({visible(e.detail[:120])})" if e.detail else ""
            return e.host, f"server {visible(e.server)} {said}{why} at {clock(e.t)}"
    running = {e.host for e in last.values() if e.state in ("starting", "ready")}
    for es in state.engines.values():
        if (host is None or es.host == host) and es.host not in running \
                and es.conn_state in ("down", "retrying") and es.scrapes:
            why = f": {visible(str(es.reason)[:120])}" if es.reason else ""
            return es.host, f"the engine at {visible(es.url)} stopped answering{why}"
    return None


def top_line(state: SessionState, host: str | None = None, *, key_hint: bool = True) -> Text:
    """The main screen's line: the top finding with its host, or what the
    triage is waiting for; a server that is down first, instead of what its
    idle GPU would suggest."""
    out = Text("triage ", style="bold")
    down = server_down(state, host)
    if down is not None:
        if len(state.triage) > 1 or host is None:
            out.append(f"{visible(down[0])}: ")
        out.append(down[1], style=DOWN_STYLE)
        out.append(" · its findings describe a server that is gone (S restarts it)", style="dim")
        return out
    got = top_finding(state, host)
    if got is None:
        if state.triage:
            out.append_text(_resolved_text(state, host))
            out.append("nothing found above 3 % of the time", style="green")
        else:
            out.append("no findings yet (a decode rate, GPU readings or a capture)", style="dim")
        return out
    h, f = got
    if len(state.triage) > 1 or host is None:
        out.append(f"{visible(h)}: ")
    # what a fix resolved first: on a narrow screen the line's end is cut
    out.append_text(_resolved_text(state, h))
    out.append_text(head_text(finding_parts(f)))
    if key_hint:
        out.append(f"  {KEY}: all findings", style="dim")
    return out


def _resolved_text(state: SessionState, host: str | None) -> Text:
    """``✔ host-stall resolved · ``: the earlier findings of ``host`` (every
    host's when None) that the last fix resolved."""
    told = [state.triage[host]] if host in state.triage else \
        list(state.triage.values()) if host is None else []
    causes = list(dict.fromkeys(e.cause for t in told for e in t.earlier
                                if e.state == "resolved"))
    if not causes:
        return Text()
    names = ", ".join(visible(c) for c in causes[:2]) + \
        (f" +{len(causes) - 2}" if len(causes) > 2 else "")
    return Text(f"✔ {names} resolved · ", style="green")


def verdict_text(state: SessionState, host: str) -> Text:
    """The Gap view's verdict line for ``host``: its top finding."""
    out = Text("verdict: ")
    got = top_finding(state, host)
    if got is None:
        out.append("nothing found above 3 % of the time (triage)", style="green")
    else:
        out.append_text(head_text(finding_parts(got[1])))
    return out


def earlier_text(e: Earlier) -> Text:
    style = {"resolved": "green", "still": "yellow", "gone": "yellow"}.get(e.state, "dim")
    mark = {"resolved": "✔ ", "still": "✘ "}.get(e.state, "· ")
    return Text(mark + visible(e.text), style=style)


PROBE_STEPS = frozenset({"stacks", "ncu"})  # next steps that run as a probe
FAILED_STYLE = "bold red"


def latest_step(state: SessionState, host: str, kind: str, since: float):
    """The latest probe of ``kind`` queued on ``host`` at or after ``since``
    (a ProbeState), or None."""
    found = None
    for p in state.probes.values():
        if p.host == host and p.kind == kind and p.queued_t >= since - 0.5:
            found = p
    return found


def step_status(state: SessionState, host: str, kind: str, since: float) -> Text | None:
    """What became of the last ``kind`` step run on ``host`` since ``since``
    (the phase's start): running since when, its result, or its failure with
    the error and what to do (the failure used to sit in the Probes pane
    while the Triage view still said "queued")."""
    if kind not in PROBE_STEPS:
        return None
    p = latest_step(state, host, kind, since)
    if p is None:
        return None
    out = Text()
    name = f"{kind} {visible(p.probe_id)}"
    if not p.finished:
        when = p.started_t if p.started_t is not None else p.queued_t
        out.append(f"{name} {p.status} on {visible(host)} since {clock(when)}", style="yellow")
        return out
    said = p.summary or (p.stderr.strip().splitlines() or [""])[-1]
    if p.status == "ok":
        out.append(f"{name} done: ", style="green")
        out.append(visible(said))
        return out
    out.append(f"{name} {p.status}: ", style=FAILED_STYLE)
    out.append(visible(said or f"exit status {p.exit_status}"))
    out.append("\nwhat to do: ", style="bold")
    out.append(_advice(kind, said))
    return out


def _advice(kind: str, said: str) -> str:
    low = said.lower()
    if kind == "stacks" and "py-spy" in low and ("not found" in low or "no py-spy" in low
                                                or "install" in low):
        return ("install py-spy where the server runs (pip install py-spy, in its venv or on "
                "PATH), then ⏎ again")
    if "ptrace" in low or "not permitted" in low:
        return ("py-spy needs ptrace: run as root, add SYS_PTRACE to the container or set "
                "kernel.yama.ptrace_scope = 0, then ⏎ again")
    if kind == "ncu" and ("not found" in low or "no ncu" in low):
        return "install Nsight Compute on the host or put ncu on PATH, then ⏎ again"
    if kind == "ncu" and ("perm" in low or "counters" in low):
        return ("ncu needs the GPU's performance counters: run as root or load the driver with "
                "NVreg_RestrictProfilingToAdminUsers=0")
    if "cannot be found" in low or "no python" in low or "not found" in low:
        return ("point the cockpit at the server: its engine URL (metrics_url) or a [[servers]] "
                "run started here, then ⏎ again")
    return "the Probes pane (2, then ⏎ on the probe) shows its whole output"

