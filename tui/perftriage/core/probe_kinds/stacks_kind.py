"""``stacks [--pid PID | --match PATTERN] [--seconds S] [--native] [--gil]``:
the Python stacks of a running engine, sampled by py-spy on its host.

A constant script in the host's Python finds the processes — SGLang's
(``sglang::scheduler…``, ``sglang::detokenizer``, the tokenizer manager in
``sglang.launch_server``), vLLM's (``VLLM::EngineCore…``, the API server),
the demo's simulated server; or ``--pid``; or every Python process whose
command line holds ``--match`` — finds py-spy (the host's PATH, beside the
host's python, or in the engine's own venv) and runs it: ``py-spy dump
--json --nonblocking`` for an instant, ``py-spy record --format raw
--nonblocking -r 100 -d S --threads`` for a window (all processes at once).
``--nonblocking`` always, so the server is never paused — except with
``--native``, which py-spy cannot do without pausing each sample (the
summary says so). perftriage never installs anything on a host.

The raw output comes back on the result line (the hottest stacks first,
within a budget) and is summarised here (:mod:`perftriage.core.stacks`);
the folded stacks are kept next to the transcript (``Verdict.files``), the
event carries the bounded summary. Failures are verdicts: py-spy missing
(how to install it in the server's venv), ptrace refused (with the host's
``kernel.yama.ptrace_scope`` and whether the probe ran as root), no
matching process (the Python processes seen).
"""

from __future__ import annotations

from typing import Any

import msgspec

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
)

RATE_HZ = 100
MAX_SECONDS = 600.0
MAX_TARGETS = 16
MAX_PID = 1 << 22  # Linux's PID_MAX_LIMIT
OUTPUT_BUDGET = 400_000  # characters of py-spy output on the result line, all processes
INSTALL_HINT = "pip install py-spy"
USAGE = "stacks [--pid PID | --match PATTERN] [--seconds S] [--native] [--gil]"


class StacksArgs(msgspec.Struct, frozen=True):
    pid: int | None = None
    match: str | None = None
    seconds: float | None = None
    native: bool = False
    gil: bool = False


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
    pid = match = seconds = None
    native = gil = False
    words = list(args)
    while words:
        w = words.pop(0)
        if w in ("--native", "--gil"):
            native, gil = native or w == "--native", gil or w == "--gil"
            continue
        name, eq, value = w.partition("=")
        if name not in ("--pid", "--match", "--seconds"):
            raise ProbeUsageError(f"usage: {USAGE} (unknown argument {w!r})")
        if not eq:
            if not words:
                raise ProbeUsageError(f"usage: {USAGE} ({name} needs a value)")
            value = words.pop(0)
        if name == "--pid":
            pid = _whole(value, 1, MAX_PID, f"--pid must be a process id (1 to {MAX_PID})")
        elif name == "--match":
            match = value
        else:
            # py-spy's --duration is a whole number of seconds
            seconds = float(_whole(value, 1, int(MAX_SECONDS), f"--seconds must be a whole "
                                                                 f"number from 1 to {MAX_SECONDS:g}"))
    if pid is not None and match is not None:
        raise ProbeUsageError(f"usage: {USAGE} (--pid or --match, not both)")
    return StacksArgs(pid, match, seconds, native, gil)


def _check(args: list[str]) -> None:
    parse_args(args)


_SCRIPT = r"""
# perftriage-stacks-probe: another probe like this one (its pattern is in its command line) is never a target
import pwd, re, shutil, stat, subprocess, tempfile, time
mode, seconds, target, value, native, gil, rate, budget, max_targets = sys.argv[1:10]
native, gil, rate, budget, max_targets = native == "1", gil == "1", int(rate), int(budget), int(max_targets)
DEFAULT = re.compile(r"^(sglang::|VLLM::)|sglang\.launch_server|sglang_sim|vllm\.entrypoints|\bvllm serve\b")
def _read(path, binary=False):
    try:
        with open(path, "rb") as f:
            data = f.read(65536)
        return data if binary else data.decode("utf-8", "replace")
    except OSError:
        return None
def _cmdline(pid):
    raw = _read("/proc/%d/cmdline" % pid, True)
    if not raw:
        return None
    return " ".join(p.decode("utf-8", "replace") for p in raw.rstrip(b"\0").split(b"\0"))[:400]
def _exe(pid):
    try:
        return os.readlink("/proc/%d/exe" % pid)
    except OSError:
        return ""
def _is_python(pid, cmd):
    first = os.path.basename(cmd.split(" ", 1)[0]) if cmd else ""
    return (os.path.basename(_exe(pid)).startswith("python") or first.startswith("python")
            or bool(re.match(r"^(sglang::|VLLM::)", cmd)))
mine = set()
p = os.getpid()
while p > 1 and p not in mine:
    mine.add(p)
    pstat = _read("/proc/%d/stat" % p) or ""
    try:
        p = int(pstat.rsplit(")", 1)[1].split()[1])
    except (IndexError, ValueError):
        break
seen, targets = [], []
for entry in os.listdir("/proc"):
    if not entry.isdigit() or int(entry) in mine:
        continue
    pid = int(entry)
    cmd = _cmdline(pid)
    if not cmd or not _is_python(pid, cmd):
        continue
    if b"# perftriage-stacks-probe:" in (_read("/proc/%d/cmdline" % pid, True) or b""):
        continue
    seen.append([pid, cmd])
    if target == "pid":
        hit = pid == int(value)
    elif target == "match":
        hit = value in cmd
    else:
        hit = bool(DEFAULT.search(cmd))
    if hit:
        targets.append([pid, cmd])
if target == "pid" and not targets and os.path.isdir("/proc/%s" % value):
    cmd = _cmdline(int(value)) or ""
    targets.append([int(value), cmd])
seen.sort()
targets.sort()
res = {"targets": [], "seen": seen[:50], "seen_total": len(seen), "euid": os.geteuid(),
       "ptrace_scope": (_read("/proc/sys/kernel/yama/ptrace_scope") or "").strip() or None}
status = _read("/proc/self/status") or ""
m = re.search(r"^CapEff:\s*([0-9a-fA-F]+)", status, re.M)
res["cap_sys_ptrace"] = bool(int(m.group(1), 16) >> 19 & 1) if m else None
if not targets:
    _emit(res, 1)
res["more_targets"] = max(0, len(targets) - max_targets)
targets = targets[:max_targets]
def _candidates(pid, cmd):
    # (path, on PATH): PATH is the probe user's own choice; every other place is the target's
    yield shutil.which("py-spy"), True
    yield os.path.join(os.path.dirname(sys.executable), "py-spy"), False
    env = _read("/proc/%d/environ" % pid, True) or b""
    for item in env.split(b"\0"):
        if item.startswith(b"VIRTUAL_ENV="):
            yield os.path.join(item[12:].decode("utf-8", "replace"), "bin", "py-spy"), False
    first = cmd.split(" ", 1)[0]
    if first.startswith("/"):
        yield os.path.join(os.path.dirname(first), "py-spy"), False
    maps = _read("/proc/%d/maps" % pid) or ""
    m = re.search(r"(/\S+?)/lib/python[0-9.]+/site-packages/", maps)
    if m:
        yield os.path.join(m.group(1), "bin", "py-spy"), False
    yield os.path.join(os.path.dirname(_exe(pid)), "py-spy"), False
def _owner(uid):
    try:
        return "uid %d (%s)" % (uid, pwd.getpwuid(uid).pw_name)
    except (KeyError, OverflowError):
        return "uid %d" % uid
def _unsafe(path):
    # (the real path, why it may not run or None): like sudo's secure path, the file and every
    # directory above it belong to root or to us and no one else can write them (a sticky
    # directory such as /tmp may be: no one else can replace what belongs to root or us in it)
    real = os.path.realpath(path)
    me, p = os.geteuid(), real
    while True:
        try:
            st = os.stat(p)
        except OSError as e:
            return real, "cannot stat %s (%s)" % (p, e.strerror)
        if st.st_uid not in (0, me):
            return real, "%s is owned by %s, not root%s" % (
                p, _owner(st.st_uid), "" if me == 0 else " or " + _owner(me))
        sticky = stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX
        if st.st_mode & stat.S_IWOTH and not sticky:
            return real, "%s is writable by others" % p
        if st.st_mode & stat.S_IWGRP and not sticky:
            return real, "%s is writable by its group (gid %d)" % (p, st.st_gid)
        if p == "/":
            return real, None
        p = os.path.dirname(p)
tried, refused, pyspy = [], [], None
for pid, cmd in targets:
    for c, on_path in _candidates(pid, cmd):
        if c and c not in tried:
            tried.append(c)
            try:
                runnable = os.path.isfile(c) and os.access(c, os.X_OK)
            except (OSError, ValueError):
                runnable = False
            if not runnable:
                continue
            if on_path:
                pyspy = c
                break
            real, why = _unsafe(c)
            if why is None:
                pyspy = real
                break
            refused.append([c[:1000], why[:1000]])
    if pyspy:
        break
res["pyspy"], res["tried"], res["refused"] = pyspy, [t[:1000] for t in tried], refused
if not pyspy:
    res["targets"] = [{"pid": pid, "name": cmd} for pid, cmd in targets]
    _emit(res, 1)
work = tempfile.mkdtemp(prefix="perftriage-stacks-")
procs = []
for pid, cmd in targets:
    if mode == "dump":
        argv = [pyspy, "dump", "--pid", str(pid), "--json"]
        out = None
    else:
        out = os.path.join(work, "%d.txt" % pid)
        argv = [pyspy, "record", "--pid", str(pid), "--format", "raw", "-r", str(rate),
                "-d", seconds, "--threads", "-o", out]
    if not native:
        argv.append("--nonblocking")
    if native:
        argv.append("--native")
    if gil and mode != "dump":
        argv.append("--gil")
    t0 = time.time()
    pr = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    procs.append((pid, cmd, argv, out, pr, t0))
share = budget // max(1, len(procs))
for pid, cmd, argv, out, pr, t0 in procs:
    limit = (float(seconds) if mode == "record" else 0) + 20
    try:
        so, se = pr.communicate(timeout=max(1, limit - (time.time() - t0)))
    except subprocess.TimeoutExpired:
        pr.kill()
        so, se = pr.communicate()
        se = (se or b"") + b"\npy-spy did not finish in time"
    text = so.decode("utf-8", "replace") if mode == "dump" else ""
    if out and os.path.exists(out):
        with open(out, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        os.unlink(out)
    dropped_lines = dropped_samples = 0
    if len(text) > share and mode == "record":
        lines = [ln for ln in text.splitlines() if ln.strip()]
        def _n(ln):
            tail = ln.rsplit(" ", 1)[-1]
            return int(tail) if tail.isdigit() else 0
        lines.sort(key=_n, reverse=True)
        kept, size = [], 0
        for ln in lines:
            if size + len(ln) + 1 > share:
                dropped_lines += 1
                dropped_samples += _n(ln)
                continue
            kept.append(ln)
            size += len(ln) + 1
        text = "\n".join(kept)
    elif len(text) > share:
        text, dropped_lines = "", -1
    res["targets"].append({"pid": pid, "name": cmd, "rc": pr.returncode, "out": text,
                           "err": se.decode("utf-8", "replace")[-2000:],
                           "dropped_lines": dropped_lines, "dropped_samples": dropped_samples,
                           "argv": argv[1:]})
try:
    os.rmdir(work)
except OSError:
    pass
_emit(res, 0 if any(t["rc"] == 0 for t in res["targets"]) else 1)
"""


def _build(args: list[str], ctx) -> str:
    a = parse_args(args)
    mode = "dump" if a.seconds is None else "record"
    target, value = ("pid", str(a.pid)) if a.pid is not None else \
        ("match", a.match) if a.match is not None else ("default", "")
    return python_command(ctx, SCRIPT_PRELUDE + _SCRIPT, [
        mode, f"{a.seconds:g}" if a.seconds is not None else "0", target, value or "-",
        "1" if a.native else "0", "1" if a.gil else "0", str(RATE_HZ), str(OUTPUT_BUDGET),
        str(MAX_TARGETS)])


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


def _process(t: dict[str, Any], mode: Mode, ticks: int | None, gil: bool,
             data: dict[str, Any]) -> ProcessStacks:
    pid, name = int(t.get("pid", 0)), str(t.get("name", ""))
    err = str(t.get("err", ""))
    if t.get("rc") != 0:
        why = _refusal(err, data)
        if why is None:
            gone = "no such file" in err.lower() or "process is running" in err.lower()
            lines = [ln for ln in err.strip().splitlines() if ln.strip()]
            why = "the process exited" if gone else \
                f"py-spy exit {t.get('rc')}" + (f": {lines[0][:200]}" if lines else "")
        return failed_process(pid, name, why)
    try:
        parsed = parse_dump(t.get("out", "")) if mode == "dump" else parse_raw(t.get("out", ""))
    except StacksError as exc:
        return failed_process(pid, name, str(exc))
    return summarise_process(pid, name, parsed.samples, mode=mode, ticks=ticks, gil=gil,
                             bad_lines=parsed.bad_lines)


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


def _interpret(args: list[str], status: int | None, out: str, err: str) -> Verdict:
    data = script_result(out)
    if data is None:
        return no_result(status, err)
    facts = {k: data.get(k) for k in ("pyspy", "ptrace_scope", "euid", "more_targets")}
    if not data.get("targets"):
        seen = data.get("seen", [])
        a = parse_args(args)
        wanted = f"pid {a.pid}" if a.pid is not None else \
            f"--match {a.match!r}" if a.match is not None else "SGLang or vLLM"
        return Verdict("no-match", f"no {wanted} process: "
                       f"{plural(int(data.get('seen_total', 0)), 'Python process', 'Python processes')} seen", {**facts, "seen": seen})
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
        return Verdict("failed", f"py-spy not found on the host: install it in the server's venv "
                       f"({INSTALL_HINT}); perftriage installs nothing on a host", missing)
    summary = summarise_result(args, data)
    detail = {**msgspec.to_builtins(summary), **facts}
    files = {f"{t['pid']}.folded" if summary.mode == "record" else f"{t['pid']}.dump.json":
             t.get("out", "") for t in data["targets"] if t.get("rc") == 0 and t.get("out")}
    dropped = sum(int(t.get("dropped_samples", 0)) for t in data["targets"])
    if dropped:
        detail["dropped_samples"] = dropped
    ok = [p for p in summary.processes if p.error is None]
    if not ok:
        first = summary.processes[0].error if summary.processes else "no output"
        return Verdict("failed", str(first), detail)
    top = summary.top
    proc = summary.process_of_top()
    what = (plural(len(ok), "process", "processes") + ", "
            + (f"{summary.seconds:g} s at {RATE_HZ} Hz" if summary.mode == "record"
               else "one dump"))
    if summary.native:
        what += (", --native paused each sample" if summary.mode == "record"
                 else ", --native paused the process")
    if top is None or proc is None:
        text = f"no active Python frame ({what})"
    else:
        idle = f", idle {proc.idle_pct:.0f} %" if proc.idle_pct is not None else ""
        text = (f"{top.name} ({_where(top)}) {top.self_pct:.1f} % of pid {proc.pid}'s "
                f"{plural(proc.samples, 'sample')}{idle} ({what})")
    failed = len(summary.processes) - len(ok)
    if failed:
        text += f"; {plural(failed, 'process', 'processes')} not read"
    return Verdict("ok", text, detail, files=files)


def _summary_of(p: ProbeResult) -> StacksSummary | None:
    return from_detail(p.detail)


def answer(p: ProbeResult, frames: int = 10) -> list[str]:
    """Per process: samples, idle and GIL shares, then its top frames."""
    s = _summary_of(p)
    if s is None or not s.processes:
        seen = p.detail.get("seen") or []
        return [f"seen: pid {pid}: {cmd}" for pid, cmd in seen[:20]]
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


def json_fields(p: ProbeResult) -> dict[str, Any]:
    """``--json``: ``processes`` and ``top`` beside ``host``."""
    s = _summary_of(p)
    if s is None:
        return {"processes": [], "top": None}
    return {"processes": msgspec.to_builtins(s.processes), "top": msgspec.to_builtins(s.top)}


STACKS_KIND = ProbeKind(
    name=KIND,
    usage=USAGE,
    help="the engine's Python stacks by py-spy (never pauses it): top frames by self and "
         "total share, idle and GIL shares; --seconds S records a window",
    min_args=0,
    max_args=8,
    build=_build,
    interpret=_interpret,
    check=_check,
    compare=lambda status, summary, detail: (detail.get("top") or {}).get("name"),
    key="k",
    label="stacks",
    answer=answer,
    report=answer,
    report_heading="top frames",
    json_fields=json_fields,
)
