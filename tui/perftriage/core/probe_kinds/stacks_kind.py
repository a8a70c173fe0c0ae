"""``stacks [--port PORT | --server-pid PID | --pid PID | --match PATTERN] [--seconds S | --dump]
[--native] [--gil]``: the Python stacks of a running engine, sampled by py-spy on its host.

A constant script in the host's Python (:mod:`perftriage.core.host_scripts`,
``stacks_pyspy.py``) finds the processes — the server's own tree (the process
listening on ``--port`` or the ``--server-pid`` the cockpit started, and their
descendants, whoever owns them; nothing when it is not there) or, of the probe
user's own processes only, SGLang's
(``sglang::scheduler…``, ``sglang::detokenizer``, the tokenizer manager in
``sglang.launch_server``), vLLM's (``VLLM::EngineCore…``, the API server),
the demo's simulated server; or ``--pid``; or every Python process whose
command line holds ``--match`` — finds py-spy (the host's PATH, beside the
host's python, or in the engine's own venv; one found outside PATH runs only
when it and every directory above it belong to root or the probe's user and
no one else can write them, else the verdict names it and why) and runs it: ``py-spy dump
--json --nonblocking`` for an instant, ``py-spy record --format raw
--nonblocking -r 100 -d S --threads`` for a window (all processes at once).
``--nonblocking`` always, so the server is never paused — except with
``--native``, which py-spy cannot do without pausing each sample (the
summary says so). perftriage never installs anything on a host.

py-spy's output goes to files capped at :data:`OUTPUT_CAP` (``RLIMIT_FSIZE``)
and is read a line at a time; bad lines are skipped and counted. It comes
back on the result line folded on the host to fit :data:`RESULT_BUDGET`
(what the transport keeps whole): frames cut to what the summary keeps, then
the frames nearest the root cut first, then the coldest stacks (a dump: idle
threads) — each cut said in the verdict. The temp dir goes on every way out
(a trap on SIGTERM/SIGHUP/SIGINT; for a probe killed outright, a reaper outside
its process group; py-spy has a parent-death signal; dirs of the probe's user
older than a day are swept, for a reaper killed too). It is summarised here (:mod:`perftriage.core.stacks`);
the folded stacks are kept next to the transcript (``Verdict.files``), the
event carries the bounded summary. Failures are verdicts: py-spy missing
(how to install it in the server's venv), ptrace refused (with the host's
``kernel.yama.ptrace_scope`` and whether the probe ran as root), no
matching process (the Python processes seen).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import sysconfig
from typing import Any

import msgspec

from perftriage.core import host_scripts
from perftriage.core.probe_kinds.kind import (
    SCRIPT_PRELUDE,
    ProbeKind,
    ProbeResult,
    ProbeUsageError,
    Verdict,
    no_result,
    python_command,
    script_result,
)
from perftriage.core.sanitize import visible
from perftriage.core.stacks.folded import StacksError, parse_dump, parse_raw
from perftriage.core.stacks.samples import plural, shares_text, short_command
from perftriage.core.stacks.summary import (
    KIND,
    Mode,
    ProcessStacks,
    StacksSummary,
    failed_process,
    from_detail,
    summarise_process,
    top_frame,
    wall_pct,
)

RATE_HZ = 100
MAX_SECONDS = 600.0
MAX_TARGETS = 16
MAX_PID = 1 << 22  # Linux's PID_MAX_LIMIT
# bytes of the whole result line as json.dumps writes it (CJK: 6 bytes a character): the
# transport keeps a probe's first 500,000 bytes whole (services/probes/runner.py,
# TRANSPORT_LIMIT_BYTES), so the host script folds the stacks to fit under that
RESULT_BUDGET = 460_000
OUTPUT_CAP = 32 << 20  # bytes of py-spy output read per process (RLIMIT_FSIZE on py-spy)
INSTALL_HINT = "pip install py-spy"
USAGE = ("stacks [--port PORT | --server-pid PID | --pid PID | --match PATTERN] "
         "[--seconds S | --dump] [--native] [--gil] [--carry]")
MAX_PORT = 65535
# the cockpit's form: a short record (one dump is a sample per thread, says little)
FORM_SECONDS = 3


class StacksArgs(msgspec.Struct, frozen=True):
    pid: int | None = None
    match: str | None = None
    seconds: float | None = None
    native: bool = False
    gil: bool = False
    # the server's own tree: the process listening on this TCP port and its descendants
    port: int | None = None
    # the server's own tree: a process the cockpit started ([[servers]]) and its descendants
    server_pid: int | None = None
    # carry perftriage's own py-spy to a remote host without one (ProbeKind.carries)
    carry: bool = False

    def target(self) -> tuple[str, str]:
        """(how the host script picks its processes, the value)."""
        for name, v in (("port", self.port), ("server", self.server_pid), ("pid", self.pid),
                        ("match", self.match)):
            if v is not None:
                return name, str(v)
        return "default", "-"

    def wanted(self) -> str:
        """What was looked for, in words."""
        return {"port": f"process on port {self.port}", "server": f"server pid {self.server_pid}",
                "pid": f"pid {self.pid} process", "match": f"--match {self.match!r} process"
                }.get(self.target()[0], "SGLang or vLLM process")


def _whole(value: str, lo: int, hi: int, must: str) -> int:
    """``value`` as a whole number from ``lo`` to ``hi`` (ASCII digits only:
    ``int()`` also takes ``٣``, and refuses 5,000 digits with a ValueError),
    or a usage error that names the value, cut to one short line."""
    if value.isascii() and value.isdecimal() and len(value) <= len(str(hi)) \
            and lo <= int(value) <= hi:
        return int(value)
    shown = repr(value[:40]) + (f"… ({len(value):,} characters)" if len(value) > 40 else "")
    raise ProbeUsageError(f"{must}, not {visible(shown)}")


def parse_args(args: list[str]) -> StacksArgs:
    """The kind's own options (the CLI and the form pass them as words)."""
    pid = match = seconds = port = server_pid = None
    native = gil = dump = carry = False
    words = list(args)
    while words:
        w = words.pop(0)
        if w in ("--native", "--gil"):
            native, gil = native or w == "--native", gil or w == "--gil"
            continue
        if w == "--dump":  # an instant: what no --seconds means too, said in a word
            dump = True
            continue
        if w == "--carry":
            carry = True
            continue
        name, eq, value = w.partition("=")
        if name not in ("--pid", "--match", "--seconds", "--port", "--server-pid"):
            raise ProbeUsageError(f"usage: {USAGE} (unknown argument {w!r})")
        if not eq:
            if not words:
                raise ProbeUsageError(f"usage: {USAGE} ({name} needs a value)")
            value = words.pop(0)
        if name == "--pid":
            pid = _whole(value, 1, MAX_PID, f"--pid must be a process id (1 to {MAX_PID})")
        elif name == "--server-pid":
            server_pid = _whole(value, 1, MAX_PID,
                                f"--server-pid must be a process id (1 to {MAX_PID})")
        elif name == "--port":
            port = _whole(value, 1, MAX_PORT, f"--port must be a TCP port (1 to {MAX_PORT})")
        elif name == "--match":
            match = value
        else:
            # py-spy's --duration is a whole number of seconds
            seconds = float(_whole(value, 1, int(MAX_SECONDS), f"--seconds must be a whole "
                                                                 f"number from 1 to {MAX_SECONDS:g}"))
    picked = [n for n, v in (("--port", port), ("--server-pid", server_pid), ("--pid", pid),
                             ("--match", match)) if v is not None]
    if len(picked) > 1:
        raise ProbeUsageError(f"usage: {USAGE} ({' and '.join(picked)}: one of them)")
    if dump and seconds is not None:
        raise ProbeUsageError(f"usage: {USAGE} (--seconds records a window, --dump an instant: "
                              "not both)")
    return StacksArgs(pid, match, seconds, native, gil, port, server_pid, carry)


def _check(args: list[str]) -> None:
    parse_args(args)


# the host script: the prelude, the folding of py-spy's output, the probe itself
SCRIPT = SCRIPT_PRELUDE + host_scripts.read("stacks_fold.py") + host_scripts.read("stacks_pyspy.py")


def own_pyspy() -> str | None:
    """The py-spy of perftriage's own environment (the ``py-spy`` wheel, a
    dependency): found where the running interpreter's scripts go. Offered to
    the host script as one more place, checked there like any file outside PATH."""
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        found = shutil.which("py-spy", path=folder)
        if found:
            return os.path.abspath(found)
    return None


def _build(args: list[str], ctx) -> str:
    a = parse_args(args)
    mode = "dump" if a.seconds is None else "record"
    target, value = a.target()
    return python_command(ctx, SCRIPT, [
        mode, f"{a.seconds:g}" if a.seconds is not None else "0", target, value or "-",
        "1" if a.native else "0", "1" if a.gil else "0", str(RATE_HZ), str(RESULT_BUDGET),
        str(MAX_TARGETS), str(OUTPUT_CAP), (own_pyspy() if ctx.local else None) or "-",
        *(ctx.carried or ("-", "-"))])


def _carries(args: list[str]) -> str | None:
    """``--carry``: perftriage's own py-spy, to carry to a host that has none."""
    return own_pyspy() if parse_args(args).carry else None


def _refusal(err: str, data: dict[str, Any]) -> str | None:
    """py-spy's stderr that says ptrace was refused, as one sentence: what
    py-spy said and only the remedies that apply to how the probe ran."""
    lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
    said = next((ln for ln in lines if "permission denied" in ln.lower()
                 or "operation not permitted" in ln.lower()), None)
    if said is None:
        return None
    root = data.get("euid") == 0
    scope = data.get("ptrace_scope")
    fixes = []
    if data.get("euid") not in (0, None):
        fixes.append("run it as root")
    if scope is not None and scope != "0" and (not root or scope == "3"):
        fixes.append(f"kernel.yama.ptrace_scope is {scope}" + (" (no ptrace at all)"
                                                                if scope == "3" else ", 0 allows it"))
    if data.get("cap_sys_ptrace") is False:
        fixes.append("no SYS_PTRACE capability (a container needs --cap-add SYS_PTRACE)")
    text = f"ptrace refused: py-spy said {said[:160]!r}"
    if fixes:
        return f"{text}; {'; '.join(fixes)}"
    if root:
        return (f"{text} although the probe ran as root with SYS_PTRACE (the process may be "
                "in another container's namespace or guarded by a security module)")
    return text


def _int(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0


def _cut_of(t: dict[str, Any]) -> dict[str, Any]:
    cut = t.get("cut")
    return cut if isinstance(cut, dict) else {}


def _process(t: dict[str, Any], mode: Mode, ticks: int | None, gil: bool,
             data: dict[str, Any]) -> ProcessStacks:
    pid, name = _int(t.get("pid")), str(t.get("name", ""))
    err = str(t.get("err", ""))
    cut = _cut_of(t)
    if t.get("error"):
        return failed_process(pid, name, str(t["error"])[:300])
    if t.get("rc") != 0 and not t.get("partial"):
        why = _refusal(err, data)
        if why is None:
            gone = "no such file" in err.lower() or "process is running" in err.lower()
            lines = [ln for ln in err.strip().splitlines() if ln.strip()]
            why = "the process exited" if gone else \
                f"py-spy exit {t.get('rc')}" + (f": {lines[0][:200]}" if lines else "")
        if cut.get("capped"):
            why = f"py-spy's output stopped at the {_int(cut['capped']) >> 20} MiB cap ({why})"
        return failed_process(pid, name, why)
    try:
        parsed = parse_dump(t.get("out", "")) if mode == "dump" else parse_raw(t.get("out", ""))
    except StacksError as exc:
        return failed_process(pid, name, str(exc))
    if not parsed.samples and (_int(cut.get("dropped_lines")) or _int(cut.get("dropped_threads"))):
        return failed_process(pid, name, "none of its stacks fit the result")
    return summarise_process(pid, name, parsed.samples, mode=mode, ticks=ticks, gil=gil,
                             bad_lines=parsed.bad_lines + _int(cut.get("bad")))


def summarise_result(args: list[str], data: dict[str, Any]) -> StacksSummary:
    a = parse_args(args)
    mode: Mode = "dump" if a.seconds is None else "record"
    ticks = round(RATE_HZ * a.seconds) if a.seconds is not None else None
    procs = [_process(t, mode, ticks, a.gil, data) for t in data.get("targets", [])
             if "rc" in t]
    return StacksSummary(processes=procs, top=top_frame(procs), mode=mode, seconds=a.seconds,
                         rate=RATE_HZ if a.seconds is not None else None, native=a.native,
                         gil=a.gil)


def _where(frame) -> str:
    return f"{frame.file}:{frame.line}" if frame.line is not None else frame.file


# py-spy record's last words: "Wrote raw flamegraph data to 'x'. Samples: 24 Errors: 1"
_PYSPY_COUNTS = re.compile(r"Samples: ([0-9]{1,12}) Errors: ([0-9]{1,12})")
_TRANSPORT_CUT = re.compile(r"\[… ([0-9,]{1,20}) bytes not kept …\]")


def _notes(data: dict[str, Any], summary: StacksSummary) -> list[str]:
    """What did not come back whole, and why (each cap that bit says so)."""
    targets = [t for t in data.get("targets", []) if isinstance(t, dict) and "rc" in t]
    cuts = [_cut_of(t) for t in targets]
    notes = []
    depths = [c["depth"] for c in cuts if _int(c.get("depth"))]
    if depths:
        notes.append(f"stacks of {plural(len(depths), 'process', 'processes')} cut to their "
                     f"innermost {plural(min(depths), 'frame')} to fit the result")
    lines, samples = (sum(_int(c.get(k)) for c in cuts) for k in ("dropped_lines",
                                                                  "dropped_samples"))
    if lines:
        notes.append(f"{plural(samples, 'sample')} in the {plural(lines, 'coldest stack')} "
                     "not kept")
    threads = sum(_int(c.get("dropped_threads")) for c in cuts)
    if threads:
        notes.append(f"{plural(threads, 'thread')} not kept")
    # (a process not read says the cap in its own error)
    capped = [_int(t.get("pid")) for t, c in zip(targets, cuts) if c.get("capped")
              and t.get("partial")]
    if capped:
        mib = max(_int(c.get("capped")) for c in cuts) >> 20
        notes.append(f"py-spy's output stopped at the {mib} MiB cap (pid "
                     f"{', '.join(map(str, capped[:5]))}{', …' if len(capped) > 5 else ''})")
    unread = []
    for t in targets:
        m = _PYSPY_COUNTS.search(str(t.get("err", "")))
        if m and int(m.group(2)):
            read, failed = int(m.group(1)), int(m.group(2))
            unread.append(f"py-spy could not read {failed} of {read + failed} samples of pid "
                          f"{_int(t.get('pid'))} (a running process's memory changes under a "
                          "non-pausing read)")
    notes += unread[:5]
    bad = sum(p.bad_lines for p in summary.processes)
    if bad:
        notes.append(f"{plural(bad, 'bad py-spy line')} skipped")
    refused = [r for r in data.get("refused") or [] if isinstance(r, list) and len(r) == 2]
    if refused:
        notes.append(f"py-spy at {refused[0][0]} refused: {refused[0][1]}")
    foreign = data.get("foreign_pid")
    if isinstance(foreign, list) and len(foreign) == 2:
        notes.append(f"pid {_int(foreign[0])} is {foreign[1]}'s process, not the probe user's: "
                     "read because --pid named it")
    return notes + _others(data)


def _no_server(data: dict[str, Any]) -> str | None:
    """The server's process not found (``--port``, ``--server-pid``): what was
    looked for and why nothing was sampled, or None."""
    gone = data.get("no_listener")
    if isinstance(gone, dict):
        port = _int(gone.get("port"))
        holders = [str(u) for u in gone.get("socket_uids") or []][:3]
        if holders:  # the socket is there, its process is not readable by this user
            return (f"port {port} is listened on by a socket of {', '.join(holders)}, whose "
                    "process this user cannot see (run the probe as root or as the server's "
                    "user): nothing sampled")
        return f"no process listens on port {port} on the host: nothing sampled"
    gone = data.get("no_server")
    if isinstance(gone, dict):
        return (f"the server's process (pid {_int(gone.get('pid'))}) is gone from the host: "
                "nothing sampled")
    return None


def _server_words(server: dict[str, Any]) -> str:
    """``server pid N (port P)``: whose tree was sampled."""
    port = f" on port {_int(server.get('port'))}" if server.get("port") is not None else ""
    return f"server pid {_int(server.get('pid'))}{port} and its tree: "


def _others(data: dict[str, Any]) -> list[str]:
    """Processes of other users that matched and were left out, said in a note."""
    others = [o for o in data.get("others") or [] if isinstance(o, list) and len(o) == 3]
    if not others:
        return []
    first = others[0]
    more = _int(data.get("others_total")) - 1
    return [f"{plural(more + 1, 'process', 'processes')} of another user left out (pid "
            f"{_int(first[0])} of {first[2]}{f' and {more} more' if more > 0 else ''}: only "
            "the probe user's own, or the server's tree by --port / --server-pid)"]


def _interpret(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    v = _verdict(args, status, out, err)
    v.summary = visible(v.summary)  # remote names: one line, no control
    return v


def _verdict(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    data = script_result(out)
    if data is None:
        cut = _TRANSPORT_CUT.search(out)
        if cut is not None:
            return Verdict("error", f"the result was cut by the transport's cap ({cut.group(1)} "
                           "bytes not kept): no stacks to show", {"exit_status": status})
        return no_result(status, err)
    facts = {k: data.get(k) for k in ("pyspy", "ptrace_scope", "euid", "more_targets", "server",
                                      "others", "others_total")}
    lost = _no_server(data)
    if lost is not None:
        return Verdict("no-match", lost, facts)
    if not data.get("targets"):
        a = parse_args(args)
        seen = plural(_int(data.get("seen_total")), "Python process", "Python processes")
        where = " in its tree" if a.target()[0] in ("port", "server") else ""
        text = f"no {a.wanted()}: {seen} seen{where}" if a.target()[0] in ("pid", "match") \
            else f"no Python {a.wanted()}{where}: {seen} seen, nothing sampled"
        return Verdict("no-match", "; ".join([text, *_others(data)]),
                       {**facts, "seen": data.get("seen", [])})
    if not data.get("pyspy"):
        missing = {**facts, "tried": data.get("tried", []), "targets": data.get("targets", []),
                   "refused": data.get("refused", [])}
        refused = [r for r in data.get("refused") or [] if isinstance(r, list) and len(r) == 2]
        if refused:
            path, why = refused[0]
            more = f" (and {plural(len(refused) - 1, 'other')})" if len(refused) > 1 else ""
            return Verdict("failed", visible(
                f"py-spy at {path} refused{more}: {why}; outside PATH perftriage runs py-spy only "
                "when the file and every directory above it belong to root or the probe's "
                f"user and no one else can write them ({INSTALL_HINT} as root, or put it on "
                "PATH)"),
                missing)
        if data.get("carried"):
            return Verdict("failed", "the carried py-spy did not run", missing)
        return Verdict("failed", "py-spy not found on the host: --carry carries perftriage's own "
                       "there for this probe (a private temp dir, checked by sha256, removed "
                       f"after), or install it in the server's venv ({INSTALL_HINT})", missing)
    summary = summarise_result(args, data)
    detail = {**msgspec.to_builtins(summary), **facts}
    files = {f"{t['pid']}.folded" if summary.mode == "record" else f"{t['pid']}.dump.json":
             t.get("out", "") for t in data["targets"] if t.get("rc") == 0 and t.get("out")}
    notes = _notes(data, summary)
    if notes:
        detail["notes"] = notes
    ok = [p for p in summary.processes if p.error is None]
    if not ok:
        first = summary.processes[0].error if summary.processes else "no output"
        return Verdict("failed", "; ".join([str(first), *notes]), detail)
    top = summary.top
    proc = summary.process_of_top()
    server = data.get("server")
    what = (_server_words(server) if isinstance(server, dict) else "") + (
            plural(len(ok), "process", "processes") + ", "
            + (f"{summary.seconds:g} s at {RATE_HZ} Hz" if summary.mode == "record"
               else "one dump"))
    if summary.native:
        what += (", --native paused each sample" if summary.mode == "record"
                 else ", --native paused the process")
    if top is None or proc is None:
        text = f"no active Python frame ({what})"
    else:
        idle = f", idle {proc.idle_pct:.0f} %" if proc.idle_pct is not None else ""
        if summary.mode == "record":  # its share of wall time first: the busy ones can mislead
            text = (f"{top.label()} ({_where(top)}) {wall_pct(top, proc):.1f} % of wall time, "
                    f"{top.self_pct:.1f} % of pid {proc.pid}'s "
                    f"{plural(proc.samples, 'busy sample')}{idle} ({what})")
        else:
            text = (f"{top.label()} ({_where(top)}) {top.self_pct:.1f} % of pid {proc.pid}'s "
                    f"{plural(proc.samples, 'thread')}{idle} ({what})")
    failed = len(summary.processes) - len(ok)
    if failed:
        text += f"; {plural(failed, 'process', 'processes')} not read"
    return Verdict("ok", "; ".join([text, *notes]), detail, files=files)


def _summary_of(p: ProbeResult) -> StacksSummary | None:
    return from_detail(p.detail)


def answer(p: ProbeResult, frames: int = 10) -> list[str]:
    """Per process: samples, idle and GIL shares, then its top frames."""
    return [visible(line) for line in _answer(p, frames)]


def _answer(p: ProbeResult, frames: int) -> list[str]:
    s = _summary_of(p)
    if s is None or not s.processes:
        seen = p.detail.get("seen") or []
        return [f"seen: pid {pid}: {short_command(str(cmd), 200)}" for pid, cmd in seen[:20]]
    out: list[str] = []
    for proc in s.processes:
        head = f"pid {proc.pid} {short_command(proc.name)}"
        if proc.error is not None:
            out.append(f"{head}: {proc.error}")
            continue
        out.append(f"{head}: {shares_text(proc)}")
        out.append(f"  {'self %':>7} {'total %':>7}  frame")
        for f in proc.frames[:frames]:
            out.append(f"  {f.self_pct:>7.1f} {f.total_pct:>7.1f}  {f.name} ({_where(f)})")
    return out


def _with_wall(row: dict[str, Any], frame, proc: ProcessStacks | None,
               mode: Mode) -> dict[str, Any]:
    """A frame's JSON with ``wall_pct`` (its self share of wall time; null for a
    dump, whose samples are threads) beside ``self_pct`` and ``total_pct`` (of
    the busy samples), after them: the first fields keep their order."""
    wall = wall_pct(frame, proc) if mode == "record" and proc is not None else None
    out: dict[str, Any] = {}
    for k, v in row.items():
        out[k] = v
        if k == "total_pct":
            out["wall_pct"] = wall
    return out


def json_fields(p: ProbeResult) -> dict[str, Any]:
    """``--json``: ``processes`` and ``top`` beside ``host``; each frame's
    ``wall_pct`` beside its ``self_pct``."""
    s = _summary_of(p)
    if s is None:
        return {"processes": [], "top": None}
    procs = []
    for proc in s.processes:
        doc = msgspec.to_builtins(proc)
        doc["frames"] = [_with_wall(row, f, proc, s.mode)
                         for row, f in zip(doc["frames"], proc.frames)]
        procs.append(doc)
    top = None if s.top is None else _with_wall(msgspec.to_builtins(s.top), s.top,
                                                s.process_of_top(), s.mode)
    return {"processes": procs, "top": top}


def server_form(pid: int | None, port: int | None) -> tuple[str, str] | None:
    """The form's first answer on the server's own tree: a ``[[servers]]`` run
    the cockpit started (its pid), else the process on the engine URL's port."""
    if pid is not None:
        return (f"--seconds {FORM_SECONDS} --server-pid {pid}",
                f"the server this cockpit started (pid {pid}) and its children")
    if port is not None:
        return (f"--seconds {FORM_SECONDS} --port {port}",
                f"the server behind the engine URL: the process on port {port} and its children")
    return None


def form_retry(p: ProbeResult) -> tuple[str, str] | None:
    """After a probe that found no py-spy on a remote host: ``--carry``, offered."""
    d = p.detail
    if p.status != "failed" or d.get("pyspy") or "tried" not in d or d.get("carried") \
            or "--carry" in p.args or own_pyspy() is None:
        return None
    return "--carry", ("py-spy was not found there: --carry carries perftriage's own for this "
                       "probe (a private temp dir, checked by sha256, removed after)")


STACKS_KIND = ProbeKind(
    name=KIND,
    usage=USAGE,
    help="the engine's Python stacks by py-spy (never pauses it): top frames by self and "
         "total share, idle and GIL shares; --seconds S records a window",
    min_args=0,
    max_args=9,
    build=_build,
    interpret=_interpret,
    check=_check,
    compare=lambda status, summary, detail: (detail.get("top") or {}).get("name"),
    key="k",
    label="stacks",
    form_value=f"--seconds {FORM_SECONDS}",
    form_help=f"--seconds S records S s ({FORM_SECONDS} by default); --dump takes one instant\n"
              "(a sample per thread); --port PORT | --server-pid PID (the server's tree) |\n"
              "--pid PID | --match PATTERN (your own processes); --gil; --native",
    server_form=server_form,
    carries=_carries,
    form_retry=form_retry,
    engine=True,
    answer=answer,
    report=answer,
    report_heading="top frames",
    json_fields=json_fields,
)
