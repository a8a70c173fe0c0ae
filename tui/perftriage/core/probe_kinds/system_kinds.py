"""``which``, ``nvsmi`` and ``shell``."""

from __future__ import annotations

import shlex
from typing import Any

from perftriage.core.probe_kinds.kind import (
    ProbeKind,
    ProbeResult,
    Verdict,
    exit_verdict,
    lookup_verdict,
    no_result,
)

# --- which NAME... ----------------------------------------------------------
# Answered by the POSIX shell itself (no Python start): shutil.which's PATH
# search. The script prints how many names it was given, then one line per
# name: ``+DIR`` (found in that PATH entry), ``+`` (a NAME with a slash that
# is executable itself) or ``-`` (not found). A name is never printed back,
# so even a name with a line break keeps one line. The answers are the last
# lines of stdout: whatever a preamble printed comes before them.

WHICH_SCRIPT = r"""set -f
rc=0
echo $#
for n do
  a=-
  case $n in
    */*) if [ -f "$n" ] && [ -x "$n" ]; then a=+; fi ;;
    *) IFS=:
       for d in $PATH; do
         if [ -f "${d:-.}/$n" ] && [ -x "${d:-.}/$n" ]; then a=+${d:-.}; break; fi
       done
       unset IFS ;;
  esac
  printf '%s\n' "$a"
  [ "$a" != - ] || rc=1
done
exit $rc"""


def _which_build(args: list[str], ctx) -> str:
    return " ".join(["sh", "-c", shlex.quote(WHICH_SCRIPT), "which",
                     *(shlex.quote(a) for a in args)])


def _which_verdict(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    lines = out.splitlines()[-(len(args) + 1):]
    if status not in (0, 1) or len(lines) != len(args) + 1 or lines[0] != str(len(args)):
        return no_result(status, err)
    paths: dict[str, str | None] = {}
    for name, answer in zip(args, lines[1:]):
        found = answer.startswith("+")
        paths[name] = (f"{answer[1:].rstrip('/')}/{name}" if answer[1:] else name) if found \
            else None
    data = {"paths": paths, "missing": [n for n, v in paths.items() if v is None],
            "argv": list(args)}  # the shell counted them: they arrived as typed
    return lookup_verdict(data, "paths", "{name}: {value}", "{name}: NOT FOUND")


def _which_framing(args: list[str], out: str) -> str:
    """stdout without the answer lines (the count and one ``+DIR``/``-`` per
    name): only what a preamble printed is left. Cut only when the tail is
    exactly that protocol, so cutting twice cuts nothing more."""
    lines = out.splitlines(keepends=True)
    n = len(args) + 1
    tail = [line.rstrip("\n") for line in lines[-n:]]
    if (len(tail) == n and tail[0] == str(len(args))
            and all(a == "-" or a.startswith("+") for a in tail[1:])):
        return "".join(lines[:-n])
    return out


WHICH_KIND = ProbeKind(
    name="which",
    usage="which NAME...",
    help="executables on the host's PATH (e.g. is nsys there?)",
    min_args=1,
    max_args=None,
    build=_which_build,
    interpret=_which_verdict,
    compare=lambda s, summ, d: d.get("paths"),
    result_line=False,
    framing=_which_framing,
    key="w",
    label="Which",
)

# --- nvsmi ----------------------------------------------------------------------
# Same query and parser as the hosts pane (tui/perftriage/core/parse/nvsmi.py),
# imported when used: it is the biggest import of a headless `probe which`.


def _nvsmi_build(args: list[str], ctx) -> str:
    from perftriage.core.parse import nvsmi

    return nvsmi.query_command(nvsmi.QUERY_FIELDS)


def _nvsmi_verdict(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    import msgspec

    from perftriage.core.parse import nvsmi

    if status == 127:
        return Verdict("failed", "nvidia-smi not found on the host", {"exit_status": status})
    if status != 0:
        last = (err.strip() or out.strip()).splitlines()
        return Verdict("failed", f"nvidia-smi exit {status}" + (f": {last[-1]}" if last else ""),
                       {"exit_status": status})
    gpus = [msgspec.to_builtins(g) for g in nvsmi.parse_query_csv(out, nvsmi.QUERY_FIELDS)]
    if not gpus:
        return Verdict("failed", "nvidia-smi listed no GPUs", {"gpus": []})
    names = sorted({str(g.get("name")) for g in gpus})
    util = [g.get("util_pct") for g in gpus]
    mem = [g.get("mem_used_mib") for g in gpus]
    summary = (f"{len(gpus)} GPU ({', '.join(names)}); util "
               + "/".join("?" if u is None else f"{u:.0f}%" for u in util)
               + "; mem " + "/".join("?" if m is None else f"{m / 1024:.0f}G" for m in mem))
    return Verdict("ok", summary, {"gpus": gpus})


# what a GPU's row shows, in this order
NVSMI_SHOWN = ("index", "name", "util_pct", "mem_used_mib", "mem_total_mib", "power_w",
               "temp_c", "sm_clock_mhz", "pstate")


def _nvsmi_answer(p: ProbeResult) -> list[str]:
    """One line per GPU."""
    return ["  " + ", ".join(f"{k}={g[k]}" for k in NVSMI_SHOWN if k in g)
            for g in p.detail.get("gpus", [])]


NVSMI_KIND = ProbeKind(
    name="nvsmi",
    usage="nvsmi",
    help="nvidia-smi --query-gpu, one row per GPU",
    min_args=0,
    max_args=0,
    build=_nvsmi_build,
    interpret=_nvsmi_verdict,
    compare=lambda s, summ, d: [(g.get("name"), g.get("mem_total_mib"))
                                for g in d.get("gpus", [])],
    result_line=False,
    key="n",
    label="nvsmi",
    answer=_nvsmi_answer,
)

# --- shell COMMAND ---------------------------------------------------------------


def _shell_compare(status: str, summary: str, d: dict[str, Any]) -> Any:
    return [d.get("exit_status"), summary]


SHELL_KIND = ProbeKind(
    name="shell",
    usage="shell COMMAND",
    help="raw shell command: runs AS SHELL, nothing is quoted",
    min_args=1,
    max_args=None,
    build=lambda args, ctx: " ".join(args),
    interpret=exit_verdict,
    parse_line=lambda line: [line] if line.strip() else [],
    compare=_shell_compare,
    result_line=False,
    key="exclamation_mark",
    label="Shell",
    form_note="runs AS SHELL",
    stdout_answers=True,
)

