"""What the probe output view shows, result first.

A person opens a probe to read its answer: the verdict and summary, then
what backs it (grep's matches, the exception of a failed import, the GPUs),
then the raw streams, the detail, and last the command — whose generated
helper script (the probes' ``python -c`` body, ~40 lines) stays collapsed to
one line unless asked for. The result framing (``@@perftriage-result@@``)
never appears: it is cut from the output shown.
"""

from __future__ import annotations

import json
import shlex

from perftriage.core import probes
from perftriage.core.model.state import ProbeState

RULE = "-" * 40


def shown_summary(p: ProbeState, profiles: list) -> str:
    """A probe's one line as the Probes pane shows it: an ncu result's share
    of the step from the session's newest capture when it has the kernel
    (the probe itself only knew the ncu run's kernel time)."""
    if p.kind != "ncu" or not profiles or not isinstance(p.detail.get("ncu"), dict):
        return p.summary
    import msgspec

    from perftriage.core.profile.ncu import NcuSummary
    from perftriage.core.profile.ncu_join import probe_line

    try:
        ncu = msgspec.convert(p.detail["ncu"], NcuSummary)
    except msgspec.ValidationError:
        return p.summary
    return probe_line(p.summary, ncu, profiles)


def _duration(s: float | None) -> str:
    if s is None:
        return ""
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def command_lines(command: str, expanded: bool) -> list[str]:
    """The command, its generated script folded to one line unless ``expanded``."""
    if expanded or "\n" not in command:
        return ["$ " + command]
    try:
        words = shlex.split(command)
    except ValueError:
        words = []
    scripts = [w for w in words if "\n" in w]
    if not scripts:
        return ["$ " + command.splitlines()[0] + " …"]
    shown = " ".join(shlex.quote(w) if "\n" not in w else "SCRIPT" for w in words)
    lines = scripts[0].count("\n") + 1
    return [f"$ {shown}", f"  (SCRIPT: the {lines}-line helper perftriage runs; "
                          "s shows it)"]


def probe_text(p: ProbeState, *, expanded: bool = False) -> str:
    """Plain text of the probe, result first (what ``c`` copies too)."""
    kind = probes.KINDS.get(p.kind)
    stdout = probes.shown_stdout(kind, list(p.args), p.stdout)
    status = p.status + (f", exit {p.exit_status}" if p.exit_status is not None else "") + (
        f", {_duration(p.duration_s)}" if p.duration_s is not None else "")
    out = [f"{p.kind} {' '.join(p.args)}  on {p.host}  ({status})", "",
           p.summary or "(no result yet)"]
    answer = probes.answer_lines(p)
    if answer:
        out += ["", *answer]
    out += ["", f"--- stdout {RULE}", stdout.rstrip("\n") or "(empty)",
            "", f"--- stderr {RULE}", p.stderr.rstrip("\n") or "(empty)"]
    if p.detail:
        out += ["", f"--- detail {RULE}",
                json.dumps(p.detail, indent=2, default=str, ensure_ascii=False)]
    group = f"  (fan-out {p.group})" if p.group else ""
    template = f"  template {p.template}" if p.template else ""
    out += ["", f"--- command {RULE}", f"probe {p.probe_id}{group}{template}",
            *command_lines(p.command, expanded)]
    return "\n".join(out) + "\n"
