"""``stacks [--pid PID | --match PATTERN] [--seconds S | --dump] [--native] [--gil]``:
the Python stacks of a running engine, sampled by py-spy on its host.

A constant script in the host's Python finds the processes — SGLang's
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
(a trap on SIGTERM/SIGHUP/SIGINT; dirs of the probe's user older than a day
are swept, for a probe killed outright). It is summarised here (:mod:`perftriage.core.stacks`);
the folded stacks are kept next to the transcript (``Verdict.files``), the
event carries the bounded summary. Failures are verdicts: py-spy missing
(how to install it in the server's venv), ptrace refused (with the host's
``kernel.yama.ptrace_scope`` and whether the probe ran as root), no
matching process (the Python processes seen).
"""

from __future__ import annotations

import re
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
USAGE = "stacks [--pid PID | --match PATTERN] [--seconds S | --dump] [--native] [--gil]"
# the cockpit's form: a short record (one dump is a sample per thread, says little)
FORM_SECONDS = 3


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
    native = gil = dump = False
    words = list(args)
    while words:
        w = words.pop(0)
        if w in ("--native", "--gil"):
            native, gil = native or w == "--native", gil or w == "--gil"
            continue
        if w == "--dump":  # an instant: what no --seconds means too, said in a word
            dump = True
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
    if dump and seconds is not None:
        raise ProbeUsageError(f"usage: {USAGE} (--seconds records a window, --dump an instant: "
                              "not both)")
    return StacksArgs(pid, match, seconds, native, gil)


def _check(args: list[str]) -> None:
    parse_args(args)


_SCRIPT = r"""
# perftriage-stacks-probe: another probe like this one (its pattern is in its command line) is never a target
import pwd, re, resource, shutil, signal, stat, subprocess, tempfile, time
mode, seconds, target, value, native, gil, rate, budget, max_targets, out_cap = sys.argv[1:11]
native, gil, rate, budget = native == "1", gil == "1", int(rate), int(budget)
max_targets, out_cap = int(max_targets), int(out_cap)
PREFIX, DAY, MAX_TEXT, MAX_LINE = "perftriage-stacks-", 86400, 300, 1 << 20
work, running = None, []
def _cleanup():
    # on every way out (a result, an exception, a signal): no py-spy left, no temp dir
    for pr in running:
        if pr.poll() is None:
            try:
                pr.kill()
                pr.wait()
            except OSError:
                pass
    if work:
        shutil.rmtree(work, ignore_errors=True)
def _trap(signum, frame):
    _cleanup()
    os._exit(128 + signum)
_SIGS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
for _sig in _SIGS:
    signal.signal(_sig, _trap)
class _held:
    # a signal between making a thing (the temp dir, a py-spy) and recording it
    # where the trap looks would leave it behind: held back until recorded
    def __enter__(self):
        signal.pthread_sigmask(signal.SIG_BLOCK, _SIGS)
    def __exit__(self, *exc):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGS)
def _sweep():
    # a probe killed outright (SIGKILL) leaves its dir: remove this user's older than a day
    tmp = tempfile.gettempdir()
    try:
        names = os.listdir(tmp)
    except OSError:
        return
    for n in names:
        if n.startswith(PREFIX):
            p = os.path.join(tmp, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and time.time() - st.st_mtime > DAY:
                shutil.rmtree(p, ignore_errors=True)
_sweep()
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
def _limit_output():
    # in the child before exec: the signals the parent held back are py-spy's again
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGS)
    # py-spy's output files stop at out_cap (SIGXFSZ, or EFBIG): an endless py-spy fills no disk
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    cap = out_cap if hard == resource.RLIM_INFINITY else min(out_cap, hard)
    resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))
def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
def _tail(path, n):
    try:
        with open(path, "rb") as f:
            f.seek(max(0, _size(path) - n))
            return f.read(n).decode("utf-8", "replace")
    except OSError:
        return ""
def _cost(text):
    # what a string costs on the result line (json.dumps escapes: CJK is 6 bytes)
    return len(json.dumps(text)) - 2
_COUNT = re.compile(r"[0-9]{1,18}")
_TID = re.compile(r"thread \((?:0x[0-9a-fA-F]{1,16}|[0-9]{1,20})\)(?:: |$)")
def _cut_part(p):
    # a frame, "name (file:line)", cut to what the summary keeps of it
    if len(p) <= 2 * MAX_TEXT + 20:
        return p
    if p.endswith(")") and " (" in p:
        name, _, where = p[:-1].rpartition(" (")
        file, sep, line = where.rpartition(":")
        if sep and _COUNT.fullmatch(line):
            return "%s (%s:%s)" % (name[:MAX_TEXT], file[:MAX_TEXT], line)
        return "%s (%s)" % (name[:MAX_TEXT], where[:MAX_TEXT])
    return p[:MAX_TEXT]
def _read_raw(path, capped):
    # folded stacks -> {parts: samples}, read a line at a time (a line is at most MAX_LINE);
    # a line that does not parse is counted and skipped
    stacks, bad = {}, 0
    try:
        f = open(path, "rb")
    except OSError:
        return stacks, bad
    with f:
        while True:
            line = f.readline(MAX_LINE)
            if not line:
                break
            if not line.endswith(b"\n"):
                if len(line) >= MAX_LINE:
                    bad += 1
                    while line and not line.endswith(b"\n"):
                        line = f.readline(MAX_LINE)
                    continue
                if capped:  # the last line, cut by the cap
                    bad += 1
                    break
            text = line.decode("utf-8", "replace").strip()
            if not text:
                continue
            stack, _, n = text.rpartition(" ")
            parts = [q for q in stack.split(";") if q]
            if not parts or not _COUNT.fullmatch(n) or (
                    parts[0].startswith("thread (") and not _TID.match(parts[0])):
                bad += 1
                continue
            key = tuple(_cut_part(q) for q in parts)
            stacks[key] = stacks.get(key, 0) + int(n)
    return stacks, bad
def _head(parts):
    return 1 if parts and parts[0].startswith("thread (") else 0
def _to_depth(stacks, depth):
    # every stack cut to its innermost `depth` frames (the thread kept), merged
    out = {}
    for parts, n in stacks.items():
        k = _head(parts)
        key = parts[:k] + parts[max(k, len(parts) - depth):]
        out[key] = out.get(key, 0) + n
    return out
_pcost = {}
def _raw_cost(stacks):
    total = 0
    for parts, n in stacks.items():
        for q in parts:
            c = _pcost.get(q)
            if c is None:
                c = _pcost[q] = _cost(q) + 1
            total += c
        total += len(str(n)) + 2
    return total
def _deepest_fit(cost_at, deepest, share):
    # the most innermost frames (1 .. deepest-1) whose cost fits in `share` (at least 1)
    lo, hi, best = 1, deepest - 1, 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if cost_at(mid) <= share:
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best
def _fit_raw(stacks, share):
    # the stacks in `share` bytes: the frames nearest the root cut first, then the coldest stacks
    cut = {}
    deepest = max((len(p) - _head(p) for p in stacks), default=0)
    if _raw_cost(stacks) > share and deepest > 1:
        best = _deepest_fit(lambda d: _raw_cost(_to_depth(stacks, d)), deepest, share)
        cut["depth"] = best
        cut["cut_stacks"] = sum(1 for p in stacks if len(p) - _head(p) > best)
        stacks = _to_depth(stacks, best)
    kept, size, lines, samples = [], 0, 0, 0
    for parts, n in sorted(stacks.items(), key=lambda kv: -kv[1]):
        c = _raw_cost({parts: n})
        if size + c > share:
            lines, samples = lines + 1, samples + n
            continue
        kept.append(";".join(parts) + " " + str(n))
        size += c
    if lines:
        cut["dropped_lines"], cut["dropped_samples"] = lines, samples
    return "\n".join(kept), cut
def _read_dump(path):
    # py-spy dump --json -> its threads with what the summary reads (frames leaf first), or why not
    try:
        with open(path, "rb") as f:
            data = f.read(out_cap + 1)
    except OSError:
        data = b""
    try:
        threads = json.loads(data.decode("utf-8", "replace"))
    except (ValueError, RecursionError) as e:  # "[[[[…": nested past the parser's depth
        return None, 0, "py-spy dump --json is not JSON: %s" % str(e)[:200]
    del data
    if not isinstance(threads, list):
        return None, 0, "py-spy dump --json is not a list of threads"
    out, bad = [], 0
    for t in threads:
        if not isinstance(t, dict) or not isinstance(t.get("frames"), list):
            bad += 1
            continue
        frames = []
        for fr in t["frames"]:
            if not isinstance(fr, dict):
                bad += 1
                continue
            line = fr.get("line")
            frames.append({"name": str(fr.get("name", ""))[:MAX_TEXT],
                           "short_filename": str(fr.get("short_filename") or fr.get("filename") or "")[:MAX_TEXT],
                           "line": line if type(line) is int else None})
        tid = t.get("os_thread_id", t.get("thread_id"))
        out.append({"thread_name": str(t.get("thread_name") or "")[:MAX_TEXT],
                    "os_thread_id": tid if type(tid) is int else None,
                    "active": t.get("active") is not False, "owns_gil": t.get("owns_gil") is True,
                    "frames": frames})
    return out, bad, None
def _dump_text(threads, depth=None):
    return json.dumps([t if depth is None else dict(t, frames=t["frames"][:depth]) for t in threads],
                      ensure_ascii=False, separators=(",", ":"))
def _fit_dump(threads, share):
    # the threads in `share` bytes: the frames nearest the root cut first, then idle threads
    cut = {}
    text = _dump_text(threads)
    deepest = max((len(t["frames"]) for t in threads), default=0)
    if _cost(text) > share and deepest > 1:
        best = _deepest_fit(lambda d: _cost(_dump_text(threads, d)), deepest, share)
        cut["depth"] = best
        cut["cut_stacks"] = sum(1 for t in threads if len(t["frames"]) > best)
        threads = [dict(t, frames=t["frames"][:best]) for t in threads]
        text = _dump_text(threads)
    if _cost(text) > share:
        kept, size = [], 2
        for t in sorted(threads, key=lambda t: not t["active"]):
            c = _cost(_dump_text([t])) - 1
            if size + c <= share:
                kept.append(t)
                size += c
        cut["dropped_threads"] = len(threads) - len(kept)
        text = _dump_text(kept)
    return text, cut
def _collect():
    procs = []
    for pid, cmd in targets:
        base = os.path.join(work, str(pid))
        if mode == "dump":
            argv = [pyspy, "dump", "--pid", str(pid), "--json"]
        else:
            argv = [pyspy, "record", "--pid", str(pid), "--format", "raw", "-r", str(rate),
                    "-d", seconds, "--threads", "-o", base + ".raw"]
        if not native:
            argv.append("--nonblocking")
        if native:
            argv.append("--native")
        if gil and mode != "dump":
            argv.append("--gil")
        with _held(), open(base + ".out", "wb") as so, open(base + ".err", "wb") as se:
            pr = subprocess.Popen(argv, stdout=so, stderr=se, stdin=subprocess.DEVNULL,
                                  preexec_fn=_limit_output)
            running.append(pr)
        procs.append((pid, cmd, argv, base, pr, time.time()))
    limit = (float(seconds) if mode == "record" else 0) + 20
    fits = []
    for pid, cmd, argv, base, pr, t0 in procs:
        late = False
        try:
            pr.wait(timeout=max(1, limit - (time.time() - t0)))
        except subprocess.TimeoutExpired:
            pr.kill()
            pr.wait()
            late = True
        path = base + (".raw" if mode == "record" else ".out")
        cut = {}
        if _size(path) >= out_cap or pr.returncode == -signal.SIGXFSZ:
            cut["capped"] = out_cap
        err = _tail(base + ".err", 1000) + ("\npy-spy did not finish in time" if late else "")
        t = {"pid": pid, "name": cmd, "rc": pr.returncode, "out": "", "err": err,
             "argv": [a[:300] for a in argv[1:]], "cut": cut}
        if mode == "record":
            stacks, cut["bad"] = _read_raw(path, "capped" in cut)
            if stacks and "capped" in cut:
                t["partial"] = True  # what py-spy wrote up to the cap is kept
            fits.append((t, _raw_cost(stacks), lambda share, s=stacks: _fit_raw(s, share)))
        elif "capped" in cut:  # a dump cut short is no JSON: not worth reading
            t["error"] = "py-spy's output stopped at the %d MiB cap" % (out_cap >> 20)
        elif pr.returncode == 0:
            threads, cut["bad"], why = _read_dump(path)
            if why is not None:
                t["error"] = why
            else:
                fits.append((t, _cost(_dump_text(threads)), lambda share, th=threads: _fit_dump(th, share)))
        for name in (".raw", ".out", ".err"):
            try:
                os.unlink(base + name)
            except OSError:
                pass
        res["targets"].append(t)
    # the result line fits the transport's budget: what it holds besides the stacks first,
    # then each process its share, the smallest first (what one leaves, the next may use)
    res["argv"] = sys.argv[1:]
    room = budget - len(json.dumps(res, default=str)) - 300 * len(res["targets"])
    fits.sort(key=lambda f: f[1])
    for i, (t, need, fit) in enumerate(fits):
        share = max(0, room) // (len(fits) - i)
        t["out"], more = fit(share)
        t["cut"].update(more)
        room -= _cost(t["out"])
    return 0 if any(t["rc"] == 0 or t.get("partial") for t in res["targets"]) else 1
with _held():
    work = tempfile.mkdtemp(prefix=PREFIX)
try:
    code = _collect()
finally:
    _cleanup()
_emit(res, code)
"""


def _build(args: list[str], ctx) -> str:
    a = parse_args(args)
    mode = "dump" if a.seconds is None else "record"
    target, value = ("pid", str(a.pid)) if a.pid is not None else \
        ("match", a.match) if a.match is not None else ("default", "")
    return python_command(ctx, SCRIPT_PRELUDE + _SCRIPT, [
        mode, f"{a.seconds:g}" if a.seconds is not None else "0", target, value or "-",
        "1" if a.native else "0", "1" if a.gil else "0", str(RATE_HZ), str(RESULT_BUDGET),
        str(MAX_TARGETS), str(OUTPUT_CAP)])


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
    bad = sum(p.bad_lines for p in summary.processes)
    if bad:
        notes.append(f"{plural(bad, 'bad py-spy line')} skipped")
    refused = [r for r in data.get("refused") or [] if isinstance(r, list) and len(r) == 2]
    if refused:
        notes.append(f"py-spy at {refused[0][0]} refused: {refused[0][1]}")
    return notes


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
    notes = _notes(data, summary)
    if notes:
        detail["notes"] = notes
    ok = [p for p in summary.processes if p.error is None]
    if not ok:
        first = summary.processes[0].error if summary.processes else "no output"
        return Verdict("failed", "; ".join([str(first), *notes]), detail)
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
        if summary.mode == "record":  # its share of wall time first: the busy ones can mislead
            text = (f"{top.name} ({_where(top)}) {wall_pct(top, proc):.1f} % of wall time, "
                    f"{top.self_pct:.1f} % of pid {proc.pid}'s "
                    f"{plural(proc.samples, 'busy sample')}{idle} ({what})")
        else:
            text = (f"{top.name} ({_where(top)}) {top.self_pct:.1f} % of pid {proc.pid}'s "
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
    form_value=f"--seconds {FORM_SECONDS}",
    form_help=f"--seconds S records S s ({FORM_SECONDS} by default); --dump takes one instant\n"
              "(a sample per thread); --pid PID | --match PATTERN; --gil; --native",
    engine=True,
    answer=answer,
    report=answer,
    report_heading="top frames",
    json_fields=json_fields,
)
