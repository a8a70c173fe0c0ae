"""``ncu [--kernel REGEX] [--launches N] [--bytes KERNEL=N]... [--steps N]
[--expert-gb E] [--] COMMAND...``: run COMMAND on the host under Nsight
Compute and say how far each kernel is from its roofline (``--bytes``: what a
launch of KERNEL must read, e.g. its weights — the answer says how many times
over it reads them; ``--steps``: how many decode steps COMMAND runs, so the
Gap view and the report compare a step's reads with the recorded gap's
weights, ``--expert-gb`` the experts' share of them — kept in the detail as
``step_read``).

The host runs :file:`core/host_scripts/ncu_wrapper.sh` (POSIX sh, sent as
text; every word quoted; COMMAND is data, argv of ncu)::

    ncu --log-file TMP/ncu.csv --clock-control none --csv --metrics dram__bytes_read.sum,…
        [-k regex:REGEX] [-c N] --graph-profiling node COMMAND...

with ncu from PATH, else ``/usr/local/cuda/bin/ncu``, under ``timeout`` (the
probe's limit less 10 s, the process group killed at the deadline). The CSV
goes to a private temporary directory, never to stdout: the command's own
output stays apart, and the CSV is folded *on the host* by
:mod:`perftriage.core.profile.ncu_csv` (its source, shipped to ``python3
-c``), so only per-kernel totals come back, however many launches. The GPU is
named from ``nvidia-smi --query-gpu=index,name`` for its datasheet peak.

ncu replays every kernel several times: the command runs many times slower
(the kind is marked heavy; its default limit is 10 minutes). Never point it at
a live server the user did not ask to slow down.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perftriage.core import host_scripts
from perftriage.core.probe_kinds.kind import (
    RESULT_MARK,
    HostContext,
    ProbeKind,
    ProbeResult,
    ProbeUsageError,
    Verdict,
    no_result,
    script_result,
)

USAGE = ("ncu [--kernel REGEX] [--launches N] [--bytes KERNEL=N]... [--steps N] [--expert-gb E] "
         "-- COMMAND...")
DEFAULT_TIMEOUT_S = 600.0
DEADLINE_MARGIN_S = 10  # the fold and the way back after ncu's deadline
# the host's answer may leave out (to fit the transport) the smallest kernels
# holding at most this share of the kernel time and still be a success
CUT_OK_PCT = 1.0
PERM_FIX = ("GPU performance counters not permitted (ERR_NVGPUCTRPERM): run as root, or "
            "allow profiling for all users (options nvidia NVreg_RestrictProfilingToAdminUsers=0 "
            "in /etc/modprobe.d, then reload the driver or reboot)")
# the host script (core/host_scripts/): ncu under the probe's deadline, the CSV to a private
# temporary dir, folded on the host; its traps, the nonce and the sweep are said there
WRAPPER = "ncu_wrapper.sh"
MISSING_FIX = ("ncu not found (PATH, /usr/local/cuda/bin/ncu): install Nsight Compute "
               "(the CUDA toolkit's nsight-compute package) on the host")


@dataclass
class NcuArgs:
    kernel: str | None = None  # ncu -k regex:KERNEL
    launches: int | None = None  # ncu -c N
    must_read: list[str] = field(default_factory=list)  # --bytes KERNEL=N (bytes it must read)
    steps: int | None = None  # --steps N: decode steps COMMAND runs (bytes a step must read)
    expert_gb: float | None = None  # --expert-gb E: the routed experts' GB of the step's weights
    command: list[str] = field(default_factory=list)


def split_args(args: list[str]) -> NcuArgs:
    """``[--kernel R] [--launches N] [--bytes KERNEL=N]... [--] COMMAND...``;
    ProbeUsageError says what is wrong."""
    from perftriage.core.profile.ncu import NcuInputError, parse_must_read

    out = NcuArgs()
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a not in ("--kernel", "--launches", "--bytes", "--steps", "--expert-gb"):
            break
        if i + 1 >= len(args):
            raise ProbeUsageError(f"{a} needs a value; usage: {USAGE}")
        value = args[i + 1]
        if a == "--kernel":
            out.kernel = value
        elif a == "--bytes":
            try:
                parse_must_read([value])
            except NcuInputError as exc:
                raise ProbeUsageError(str(exc)) from None
            out.must_read.append(value)
        elif a == "--steps":
            out.steps = int(value) if value.isdigit() else 0
            if out.steps < 1:
                raise ProbeUsageError(f"--steps {value!r}: give a whole number ≥ 1")
        elif a == "--expert-gb":
            out.expert_gb = _positive(a, value)
        else:
            out.launches = int(value) if value.isdigit() else 0
            if out.launches < 1:
                raise ProbeUsageError(f"--launches {value!r}: give a whole number ≥ 1")
        i += 2
    out.command = args[i:]
    if not out.command:
        raise ProbeUsageError(f"no COMMAND to profile; usage: {USAGE}")
    if out.command[0].startswith("-"):
        raise ProbeUsageError(f"COMMAND starts with {out.command[0]!r}: ncu would read it as "
                              f"its own option; usage: {USAGE}")
    return out


def _positive(flag: str, value: str) -> float:
    try:
        v = float(value)
    except ValueError:
        v = -1.0
    if not math.isfinite(v) or v <= 0:
        raise ProbeUsageError(f"{flag} {value!r}: give a number of GB > 0")
    return v


def _check(args: list[str]) -> None:
    split_args(args)  # raises ProbeUsageError naming what is wrong


def ncu_flags(kernel: str | None, launches: int | None) -> list[str]:
    """ncu's own flags, as the issue spells them (plus --graph-profiling node:
    kernels in CUDA graphs are profiled one by one)."""
    from perftriage.core.profile.ncu import NCU_FLAGS

    flags = list(NCU_FLAGS)
    if kernel:
        flags += ["-k", f"regex:{kernel}"]
    if launches:
        flags += ["-c", str(launches)]
    return flags + ["--graph-profiling", "node"]


def _fold_source() -> str:
    from perftriage.core.profile import ncu_csv

    return Path(ncu_csv.__file__).read_text(encoding="utf-8")


def deadline_s(ctx: HostContext) -> int:
    """Seconds the host gives ncu: the probe's limit less a margin (0: no limit)."""
    if not ctx.deadline_s:
        return 0
    return max(1, int(ctx.deadline_s) - DEADLINE_MARGIN_S)


def _build(args: list[str], ctx: HostContext) -> str:
    a = split_args(args)
    words = ["sh", "-c", host_scripts.read(WRAPPER), "perftriage-ncu", ctx.python, str(deadline_s(ctx)),
             _fold_source(), RESULT_MARK, *ncu_flags(a.kernel, a.launches), *a.command]
    return " ".join(shlex.quote(w) for w in words)


def _perm_denied(*texts: str) -> bool:
    return any("ERR_NVGPUCTRPERM" in t for t in texts)


def _interpret(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    from perftriage.core.profile import ncu

    data = script_result(out)
    base: dict[str, Any] = {"exit_status": status}
    if data is None:
        if _perm_denied(out, err):
            return Verdict("failed", PERM_FIX, {**base, "fix": "permissions"})
        return no_result(status, err)
    if data.get("missing") == "ncu":
        return Verdict("failed", MISSING_FIX, {**base, "fix": "install"})
    notes = [str(n) for n in data.get("notes", [])]
    if _perm_denied(err, *notes):
        return Verdict("failed", PERM_FIX, {**base, "fix": "permissions", "notes": notes})
    if status == 124:
        return Verdict("failed", "ncu ran past its deadline (the probe's limit less "
                       f"{DEADLINE_MARGIN_S} s): profile fewer launches (--launches N) or one "
                       "kernel (--kernel REGEX), or give a longer --timeout",
                       {**base, "notes": notes})
    if data.get("error"):
        if any("No kernels were profiled" in n for n in notes):
            return Verdict("no-match", "no kernel was profiled"
                           + (" (--kernel matched none?)" if "-k" in _flags_of(args) else ""),
                           {**base, "notes": notes})
        tail = f"; exit {status}" if status else ""
        return Verdict("failed", f"ncu wrote no usable CSV: {str(data['error'])[:200]}{tail}",
                       {**base, "error": str(data["error"]), "notes": notes})
    try:
        a = split_args(args)
        must = ncu.parse_must_read(a.must_read)
        # the GPU's peak from its name (core/gpus.py)
        summary = ncu.summarize(data, must_read=must)
    except ncu.NcuInputError as exc:
        return Verdict("failed", str(exc)[:300], {**base, "error": str(exc), "notes": notes})
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, ProbeUsageError) as exc:
        # the host's answer is not what the fold prints: say so, never crash the queue
        return Verdict("error", f"the host's ncu result is not understood ({type(exc).__name__})",
                       {**base, "notes": notes})
    import msgspec

    detail = {**base, "ncu": msgspec.to_builtins(summary)}
    if a.steps is not None:
        detail["step_read"] = {"steps": a.steps, "expert_gb": a.expert_gb}
    line = summary_line(summary)
    if status != 0:
        return Verdict("failed", f"command exit {status}; {line}", detail)
    if summary.cut_time_pct > CUT_OK_PCT:
        # what came back is not the run's picture: no success without the data
        return Verdict("failed", f"{line}: profile fewer kernels (--kernel REGEX)", detail)
    return Verdict("ok", line, detail)


def _flags_of(args: list[str]) -> list[str]:
    try:
        a = split_args(args)
    except ProbeUsageError:
        return []
    return ncu_flags(a.kernel, a.launches)


def summary_line(s: Any) -> str:
    """``NVIDIA H200: 18 kernels, 190 launches; furthest below roofline:
    fused_moe_kernel 4.2 % of the ncu run's kernel time at 50 % of peak (≈ 2.1 % of it
    recoverable)``: of the ncu run's own kernel time (its first launches may be
    weight initialisation); with a capture in the session the Probes pane shows
    the step's share instead (``ncu_join.probe_line``)."""
    from perftriage.core.profile.ncu import bw_pct, cut_text, furthest_below, recoverable_pct
    from perftriage.core.profile.table import short_name
    from perftriage.core.sanitize import visible

    head = f"{visible(s.gpu or 'GPU ?')}: {len(s.kernels)} kernels, {s.launches} launches"
    cut = cut_text(s)
    tail = f"; {cut}" if cut else ""
    worst = furthest_below(s, 1)
    if not worst:
        return head + "; none memory-bound below its roofline" + tail
    k = worst[0]
    return (f"{head}; furthest below roofline: {short_name(k.name, 40)} {k.time_pct:.1f} % of "
            f"the ncu run's kernel time at {bw_pct(k):.0f} % of peak (≈ "
            f"{recoverable_pct(k):.1f} % of it recoverable)"
            + tail)


def summary_of(p: ProbeResult) -> Any:
    """The probe's :class:`NcuSummary`, or None."""
    import msgspec

    from perftriage.core.profile.ncu import NcuSummary

    raw = p.detail.get("ncu")
    if not isinstance(raw, dict):
        return None
    try:
        return msgspec.convert(raw, NcuSummary)
    except msgspec.ValidationError:
        return None


def _answer(p: ProbeResult) -> list[str]:
    from perftriage.core.profile.ncu_table import render

    s = summary_of(p)
    if s is None:
        return [f"ncu: {n}" for n in p.detail.get("notes", [])]
    return render(s, top=20).splitlines()


NCU_KIND = ProbeKind(
    name="ncu",
    usage=USAGE,
    help="HEAVY: run COMMAND under Nsight Compute; per kernel GB/s against its roofline",
    min_args=1,
    max_args=None,
    build=_build,
    interpret=_interpret,
    check=_check,
    compare=lambda status, summary, d: [(k.get("name"), k.get("verdict"))
                                        for k in d.get("ncu", {}).get("kernels", [])],
    label="ncu",
    form_note="HEAVY: ncu replays each kernel, the command runs many times slower",
    heavy=True,
    engine=True,
    timeout_s=DEFAULT_TIMEOUT_S,
    answer=_answer,
    report=_answer,
    report_heading="kernels against their roofline (Nsight Compute)",
    nonce=True,
)
