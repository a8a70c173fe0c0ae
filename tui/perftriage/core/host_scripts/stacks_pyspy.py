# perftriage-stacks-probe: another probe like this one (its pattern is in its command line) is never a target
"""The stacks probe's host script: find the engine's processes, find a py-spy that is safe to
run, sample them all at once, fold the result to fit one result line.

Sent as ``python -c`` after ``SCRIPT_PRELUDE`` (``perftriage.core.probe_kinds.kind``: it
imports sys, json, os and defines ``_emit``) and ``stacks_fold.py`` (reading and folding
py-spy's output), with its arguments as ``sys.argv[1:]``; runs
in the host's own Python (the standard library only). Read by
``perftriage.core.probe_kinds.stacks_kind``, which documents what it does and why.
"""
import ctypes, hashlib, json, os, pwd, re, resource, shutil, signal, stat, subprocess, sys, tempfile, time
from typing import TYPE_CHECKING, Any, Callable, NoReturn
if TYPE_CHECKING:  # sent before this script in the same -c (stacks_kind.py): never imported
    from perftriage.core.host_scripts.stacks_fold import (
        _cost, _dump_text, _fit_dump, _fit_raw, _raw_cost, _read_dump, _read_raw)
_emit: Callable[..., NoReturn] = globals()["_emit"]  # from the prelude
(mode, seconds, target, value, native_s, gil_s, rate_s, budget_s, max_targets_s, out_cap_s,
 own, carried, carried_sha) = sys.argv[1:14]
native, gil, rate, budget = native_s == "1", gil_s == "1", int(rate_s), int(budget_s)
max_targets, out_cap = int(max_targets_s), int(out_cap_s)
PREFIX, DAY = "perftriage-stacks-", 86400
work: Any = None
running: list = []
def _cleanup():
    # on every way out (a result, an exception, a signal): no py-spy left, no temp dir
    for pr in running:
        if pr.poll() is None:
            try:
                pr.kill()
                pr.wait()
            except OSError:
                pass
    for d in (work, os.path.dirname(carried) if carried != "-" else None):
        if d:
            shutil.rmtree(d, ignore_errors=True)
def _done(code):
    _cleanup()
    _emit(res, code)
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
    # a probe killed outright whose reaper was killed too leaves its dir: this user's older than a day go
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
def _read(path, binary=False, cap=65536):
    try:
        with open(path, "rb") as f:
            data = f.read(cap)
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
def _ppid(pid):
    pstat = _read("/proc/%d/stat" % pid) or ""
    try:
        return int(pstat.rsplit(")", 1)[1].split()[1])
    except (IndexError, ValueError):
        return 0
def _uid(pid):
    try:
        return os.stat("/proc/%d" % pid).st_uid
    except OSError:
        return None
def _owner(uid):
    try:
        return "uid %d (%s)" % (uid, pwd.getpwuid(uid).pw_name)
    except (KeyError, OverflowError, TypeError):
        return "uid %s" % uid
mine = set()
p = os.getpid()
while p > 1 and p not in mine:
    mine.add(p)
    p = _ppid(p)
me = os.geteuid()
pids = sorted(int(e) for e in os.listdir("/proc") if e.isdigit() and int(e) not in mine)
res: dict = {"targets": [], "euid": me,
             "ptrace_scope": (_read("/proc/sys/kernel/yama/ptrace_scope") or "").strip() or None}
def _listeners(port):
    # the pids holding a listening TCP socket on `port` (IPv4 or IPv6), and the uids of the
    # sockets found: /proc/net/tcp{,6} (state 0A) -> socket inodes -> /proc/PID/fd
    inodes, uids = set(), set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in (_read(table, cap=64 << 20) or "").splitlines()[1:]:
            f = row.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f[9])
                uids.add(int(f[7]))
    holders = []
    for pid in pids:
        try:
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in inodes:
                holders.append(pid)
                break
    return holders, sorted(uids)
def _tree(roots):
    # the roots and every descendant: an engine's HTTP server and its schedulers, detokenizer
    children = {}
    for pid in pids:
        children.setdefault(_ppid(pid), []).append(pid)
    out, todo = [], list(roots)
    while todo:
        pid = todo.pop(0)
        if pid not in out and pid not in mine:
            out.append(pid)
            todo.extend(children.get(pid, []))
    return out
seen: list = []
targets: list = []
others: list = []
tree: list = []
by_tree = target in ("port", "server")
if target == "port":
    holders, socket_uids = _listeners(int(value))
    if not holders:
        res["no_listener"] = {"port": int(value), "socket_uids": [_owner(u) for u in socket_uids]}
        _done(1)
    roots = [h for h in holders if _ppid(h) not in holders]  # pre-forked workers share the socket
    tree = _tree(roots)
    res["server"] = {"port": int(value), "pid": roots[0], "name": _cmdline(roots[0]) or "",
                     "owner": _owner(_uid(roots[0])), "tree": len(tree)}
elif target == "server":
    if not os.path.isdir("/proc/%s" % value):
        res["no_server"] = {"pid": int(value)}
        _done(1)
    tree = _tree([int(value)])
    res["server"] = {"pid": int(value), "name": _cmdline(int(value)) or "",
                     "owner": _owner(_uid(int(value))), "tree": len(tree)}
for pid in tree if by_tree else pids:
    cmd = _cmdline(pid)
    if not cmd or not _is_python(pid, cmd):
        continue
    if b"# perftriage-stacks-probe:" in (_read("/proc/%d/cmdline" % pid, True) or b""):
        continue
    seen.append([pid, cmd])
    if by_tree:
        hit = True  # the server's own tree: whoever owns a process of it
    elif target == "pid":
        hit = pid == int(value)
    elif target == "match":
        hit = value in cmd
    else:
        hit = bool(DEFAULT.search(cmd))
    if hit and not by_tree and target != "pid" and _uid(pid) != me:
        # never another user's process by a pattern: theirs is not this server (a decoy, a job)
        others.append([pid, cmd, _owner(_uid(pid))])
        continue
    if hit:
        targets.append([pid, cmd])
if target == "pid" and not targets and os.path.isdir("/proc/%s" % value):
    cmd = _cmdline(int(value)) or ""
    targets.append([int(value), cmd])
if target == "pid" and targets and _uid(targets[0][0]) != me:  # named by the user: said so
    res["foreign_pid"] = [targets[0][0], _owner(_uid(targets[0][0]))]
if by_tree:  # the server first, then its children in pid order
    targets.sort(key=lambda t: (t[0] != tree[0], t[0]))
else:
    targets.sort()
def _started(pid):
    try:  # /proc/PID/stat's starttime (clock ticks since boot)
        return int((_read("/proc/%d/stat" % pid) or "").rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError):
        return 0
seen.sort(key=lambda s: (-_started(s[0]), s[0]))  # the newest first: a server just started
res.update(seen=seen[:50], seen_total=len(seen), others=others[:20], others_total=len(others))
status = _read("/proc/self/status") or ""
m = re.search(r"^CapEff:\s*([0-9a-fA-F]+)", status, re.M)
res["cap_sys_ptrace"] = bool(int(m.group(1), 16) >> 19 & 1) if m else None
if not targets:
    _done(1)
res["more_targets"] = max(0, len(targets) - max_targets)
targets = targets[:max_targets]
def _candidates(pid, cmd):
    # (path, trusted): PATH is the probe user's own choice;
    # every other place is the target's, run only when _unsafe finds nothing
    if carried != "-":
        return  # carried: that file and no other
    yield shutil.which("py-spy"), True
    if own != "-":  # perftriage's own (its wheel's): checked like any file outside PATH
        yield own, False
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
def _unsafe(path):
    # (the real path, why it may not run or None): like sudo's secure path, the file and every
    # directory above it belong to root or to us and no one else can write them (a sticky
    # directory such as /tmp may be: no one else can replace what belongs to root or us in it)
    real = os.path.realpath(path)
    p = real
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
def _carried_ok():
    # the py-spy perftriage carried here: its own private dir (a real dir, ours, 0700, no link),
    # a regular file of ours no one else can write, the bytes that were sent (sha256)
    d = os.path.dirname(carried)
    try:
        dst, fst = os.lstat(d), os.lstat(carried)
    except OSError as e:
        return "cannot stat the carried py-spy (%s)" % e.strerror
    if not stat.S_ISDIR(dst.st_mode) or dst.st_uid != me or stat.S_IMODE(dst.st_mode) != 0o700:
        return "%s is not a private directory of %s (0700)" % (d, _owner(me))
    if not stat.S_ISREG(fst.st_mode) or fst.st_uid != me or fst.st_mode & 0o022 or fst.st_nlink != 1:
        return "%s is not a regular file of %s that only it can write" % (carried, _owner(me))
    h = hashlib.sha256()
    with open(carried, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if h.hexdigest() != carried_sha:
        return "the carried py-spy's sha256 is %s, not the %s sent" % (h.hexdigest()[:16], carried_sha[:16])
    return None
tried: list = []
refused: list = []
pyspy = None
if carried != "-":
    why = _carried_ok()
    tried.append(carried)
    if why is None:
        os.chmod(carried, 0o700)
        pyspy = carried
    else:
        refused.append([carried[:1000], why[:1000]])
for pid, cmd in targets:
    for c, trusted in _candidates(pid, cmd):
        if c and c not in tried:
            tried.append(c)
            try:
                runnable = os.path.isfile(c) and os.access(c, os.X_OK)
            except (OSError, ValueError):
                runnable = False
            if not runnable:
                continue
            if trusted:
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
res["carried"] = carried != "-"
if not pyspy:
    res["targets"] = [{"pid": pid, "name": cmd} for pid, cmd in targets]
    _done(1)
_PARENT = os.getpid()
def _limit_output():
    # in the child before exec: py-spy dies with this script however it ends (a SIGKILL of the
    # script alone included); the signals the parent held back are py-spy's again
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != _PARENT:
        os._exit(1)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGS)
    # py-spy's output files stop at out_cap (SIGXFSZ, or EFBIG): an endless py-spy fills no disk
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    cap = out_cap if hard == resource.RLIM_INFINITY else min(out_cap, hard)
    resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))
def _reaper(dirs):
    # a process outside the probe's process group (the transport kills that group on a cancel,
    # a timeout, a dropped connection) that removes the temp dirs once this script is gone,
    # however it ends; it reads the py-spy pids, and EOF when the script is gone
    r, w = os.pipe()
    if os.fork():
        os.close(r)
        return w
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)  # the channel's pipes are not held open by the reaper
        os.closerange(3, r)
        os.closerange(r + 1, 1 << 16)
        data = b""
        while True:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            data += chunk
        for pid in data.split():
            for _ in range(50):  # py-spy dies with the script (its parent-death signal)
                if not os.path.exists("/proc/%s" % pid.decode()):
                    break
                time.sleep(0.02)
        for d in dirs:
            if d:
                shutil.rmtree(d, ignore_errors=True)
    finally:
        os._exit(0)
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
            os.write(reaper, b"%d\n" % pr.pid)
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
            threads, cut["bad"], why = _read_dump(path, out_cap)
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
    reaper = _reaper([work, os.path.dirname(carried) if carried != "-" else None])
try:
    code = _collect()
finally:
    _cleanup()
_emit(res, code)
