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
MAX_MATCHES_SHOWN = 200


def _duration(s: float | None) -> str:
    if s is None:
        return ""
    return f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def answer_lines(p: ProbeState) -> list[str]:
    """What backs the verdict, per kind (empty when the summary says it all)."""
    d = p.detail
    out: list[str] = []
    if p.kind == "grep" and d.get("matches"):
        out += [f"{d.get('count')} matches in {d.get('files')} files "
                f"({d.get('searched')} searched, {d.get('tool', 'python')}):"]
        out += [f"  {m}" for m in d["matches"][:MAX_MATCHES_SHOWN]]
        if d.get("truncated"):
            out.append(f"  … {d['count'] - len(d['matches'])} more")
    elif p.kind == "import" and d.get("ok") is False:
        out.append(f"{d.get('error')}: {d.get('message')}")
        tail = [x for x in p.stderr.strip().splitlines() if x.strip()][-3:]
        out += [f"  {x}" for x in tail if f"{d.get('error')}:" not in x]
    elif p.kind == "nvsmi":
        for g in d.get("gpus", []):
            out.append("  " + ", ".join(f"{k}={g[k]}" for k in
                                        ("index", "name", "util_pct", "mem_used_mib",
                                         "mem_total_mib", "power_w", "temp_c") if k in g))
    elif d.get("error"):
        out.append(str(d["error"]))
    return out


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
    answer = answer_lines(p)
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
