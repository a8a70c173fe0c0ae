"""The stacks probe under attack (issue 42): its host script run for real,
as root, on this machine, against fake py-spy executables written here
(what is tested is ours: which binary runs, how its output is read, what
is left behind) and real Python processes as targets.

- a py-spy planted outside PATH by another user never runs (item 1);
- a number no int() takes is a usage error, not a traceback (item 6);
- one bad py-spy line costs that line, not the result (item 7);
- endless py-spy output stops at a cap, said so, nothing left in /tmp (8);
- a realistic server's dumps all come back, the root frames cut first (11);
- a record too big for the transport is folded on the host to fit (12);
- the temp dir goes on every path: a signal, a crash, a day-old sweep (13);
- CR/LF in a frame name or a command line never splits a line (15).
"""

from __future__ import annotations

import json
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.model.state import ProbeState
from perftriage.core.probe_kinds.kind import HostContext, Verdict, script_result
from perftriage.core.probe_kinds.stacks_kind import STACKS_KIND, answer
from perftriage.core.stacks.folded import parse_raw
from perftriage.services.probes.runner import TRANSPORT_LIMIT_BYTES
from tests.support.stacks_support import result

NOBODY = 65534
SYSTEM_PATH = "/usr/bin:/bin"

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to nobody needs root")


# --- what the tests share ---------------------------------------------------------------------


def host_python(tmp_path: Path) -> str:
    """This Python under another name, in a directory with no py-spy beside it
    (the host script looks beside its own python too)."""
    d = tmp_path / "hostpy"
    d.mkdir(exist_ok=True)
    link = d / "python3"
    if not link.exists():
        link.symlink_to(sys.executable)
    return str(link)


def write_exe(path: Path, body: str, mode: int = 0o755) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(mode)
    return path


def lone_python(tmp_path: Path) -> str:
    """A copy of this Python's binary in a directory of its own (PYTHONHOME
    finds its library): a target whose /proc/PID/exe has no py-spy beside it."""
    d = tmp_path / "lonepy"
    exe = d / "python3"
    if not exe.exists():
        d.mkdir()
        shutil.copy2(os.path.realpath(sys.executable), exe)
    return str(exe)


@contextmanager
def target(tag: str, env: dict[str, str] | None = None, argv0: str | None = None,
           n: int = 1) -> Iterator[list[subprocess.Popen]]:
    """``n`` real Python processes whose command lines hold ``tag``."""
    code = "import time\ntime.sleep(300)"
    env = {**os.environ, "PYTHONHOME": sys.base_prefix, **(env or {})}
    procs = [subprocess.Popen([argv0 or sys.executable, "-c", code, tag], env=env)
             for _ in range(n)]
    try:
        deadline = time.time() + 10
        while time.time() < deadline and not all(
                tag in Path(f"/proc/{p.pid}/cmdline").read_bytes().decode(errors="replace")
                for p in procs):
            time.sleep(0.02)
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def host_command(tmp_path: Path, args: list[str]) -> list[str]:
    return shlex.split(STACKS_KIND.build(args, HostContext(python=host_python(tmp_path))))


def run_host(tmp_path: Path, args: list[str], path: str = SYSTEM_PATH, timeout: float = 120,
             tmpdir: Path | None = None) -> tuple[int, str, str, Verdict]:
    """The stacks probe's host script, run as the transport runs it (its own
    argv), with PATH and TMPDIR set; its verdict."""
    env = {"PATH": path, "TMPDIR": str(tmpdir or scratch(tmp_path)), "HOME": "/root"}

    def cap_memory() -> None:  # the attack's own limit: 4 GiB of address space
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    r = subprocess.run(host_command(tmp_path, args), env=env, capture_output=True, text=True,
                       timeout=timeout, preexec_fn=cap_memory)
    return r.returncode, r.stdout, r.stderr, STACKS_KIND.interpret(args, r.returncode,
                                                                   r.stdout, r.stderr)


def scratch(tmp_path: Path) -> Path:
    d = tmp_path / "tmp"
    d.mkdir(exist_ok=True)
    return d


def left_behind(tmpdir: Path) -> list[str]:
    return sorted(p.name for p in tmpdir.iterdir() if p.name.startswith("perftriage-stacks-"))


def probe_of(args: list[str], v: Verdict) -> ProbeState:
    return ProbeState(probe_id="p1", host="h", kind="stacks", args=args, status=v.status,
                      summary=v.summary, detail=v.detail)


# a fake py-spy: `dump` prints a JSON dump of one thread whose leaf is `fake_leaf`;
# `record` writes folded stacks to its -o file; both touch MARKER when given
FAKE_OK = """
import json, os, sys
marker = os.environ.get("FAKE_MARKER") or %r
if marker:
    open(marker, "w").write("ran as uid %%d" %% os.geteuid())
if sys.argv[1] == "dump":
    print(json.dumps([{"thread_name": "MainThread", "os_thread_id": 1, "active": True,
                       "owns_gil": False, "frames": [{"name": "fake_leaf",
                       "short_filename": "f.py", "line": 3}]}]))
else:
    out = sys.argv[sys.argv.index("-o") + 1]
    open(out, "w").write("thread (1): MainThread;main (f.py:1);fake_leaf (f.py:3) 50\\n")
"""


# --- 1: root never runs another user's py-spy --------------------------------------------------


def _plant(root: Path, marker: Path, how: str) -> Path:
    """A venv-like tree holding a fake py-spy that writes ``marker``, made
    unsafe in one way (``how``); returns the planted py-spy."""
    exe = write_exe(root / "bin" / "py-spy", FAKE_OK % str(marker))
    os.chmod(root, 0o755)
    os.chmod(root / "bin", 0o755)
    if how == "nobody owns it all":
        for p in (root, root / "bin", exe):
            os.chown(p, NOBODY, NOBODY)
    elif how == "nobody owns the directory":
        os.chown(root / "bin", NOBODY, NOBODY)
    elif how == "group-writable directory":
        os.chmod(root / "bin", 0o775)
    elif how == "world-writable file":
        os.chmod(exe, 0o777)
    elif how == "nobody owns a directory above":
        os.chown(root, NOBODY, NOBODY)
    return exe


REASONS = {
    "nobody owns it all": "owned by uid 65534 (nobody)",
    "nobody owns the directory": "owned by uid 65534 (nobody)",
    "nobody owns a directory above": "owned by uid 65534 (nobody)",
    "group-writable directory": "writable by its group",
    "world-writable file": "writable by others",
}


@needs_root
@pytest.mark.parametrize("how", list(REASONS))
def test_root_never_runs_a_py_spy_planted_in_the_targets_venv(tmp_path, how):
    tag = f"planted-{uuid.uuid4().hex[:8]}"
    venv, marker = tmp_path / "x", tmp_path / "MARKER"
    exe = _plant(venv, marker, how)
    with target(tag, env={"VIRTUAL_ENV": str(venv)}, argv0=lone_python(tmp_path)):
        rc, out, err, v = run_host(tmp_path, ["--match", tag])
    assert not marker.exists(), f"the planted py-spy ran: {marker.read_text()}"
    assert v.status == "failed", (v, err)
    assert str(exe) in v.summary and REASONS[how] in v.summary, v.summary
    assert "refused" in v.summary
    assert [str(exe), v.detail["refused"][0][1]] in v.detail["refused"]


@needs_root
def test_root_never_runs_a_py_spy_beside_a_planted_argv0(tmp_path):
    """``nobody`` starts Python through a link in a directory of theirs: the
    py-spy beside argv[0] is theirs too."""
    tag = f"argv0-{uuid.uuid4().hex[:8]}"
    bin_dir, marker = tmp_path / "y" / "bin", tmp_path / "MARKER"
    exe = write_exe(bin_dir / "py-spy", FAKE_OK % str(marker))
    (bin_dir / "python3").symlink_to(lone_python(tmp_path))
    for p in (bin_dir.parent, bin_dir, exe):
        os.chown(p, NOBODY, NOBODY)
    os.lchown(bin_dir / "python3", NOBODY, NOBODY)
    with target(tag, argv0=str(bin_dir / "python3")):
        rc, out, err, v = run_host(tmp_path, ["--match", tag])
    assert not marker.exists()
    assert v.status == "failed" and str(exe) in v.summary and "uid 65534" in v.summary


@needs_root
def test_a_root_owned_tree_no_one_else_can_write_is_accepted(tmp_path):
    tag = f"trusted-{uuid.uuid4().hex[:8]}"
    venv, marker = tmp_path / "good", tmp_path / "MARKER"
    exe = write_exe(venv / "bin" / "py-spy", FAKE_OK % str(marker))
    for d in (venv, venv / "bin"):
        os.chmod(d, 0o755)
    with target(tag, env={"VIRTUAL_ENV": str(venv)}, argv0=lone_python(tmp_path)):
        rc, out, err, v = run_host(tmp_path, ["--match", tag])
    assert marker.read_text() == "ran as uid 0"
    assert v.status == "ok" and "fake_leaf" in v.summary, (v, err)
    assert v.detail["pyspy"] == str(exe) and not v.detail.get("refused")


# --- 6: numbers no int() takes ------------------------------------------------------------------


@pytest.mark.parametrize("args", [["--seconds", "²"], ["--pid", "9" * 5000], ["--pid", "²"],
                                  ["--seconds", "9" * 5000], ["--pid", "٣"]])
def test_a_number_no_int_takes_is_a_usage_error(tmp_path, args):
    config = tmp_path / "c.toml"
    config.write_text('[[hosts]]\nname = "localhost"\n')
    r = CliRunner().invoke(cli, ["--config", str(config), "probe", "stacks", *args])
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    (line,) = r.output.strip().splitlines()
    assert args[0] in line and len(line) < 200
    assert args[1][:20] in line  # names the value (cut when long)


# --- 7: one bad line ---------------------------------------------------------------------------


BAD_LINES = ("thread (abc): MainThread;f (a.py:1) 5\n"
             "thread (1): MainThread;g (b.py:2) ²\n"
             f"thread (1): MainThread;h (c.py:3) {'9' * 5000}\n"
             "thread (1): MainThread;main (m.py:1);good_leaf (g.py:7) 40\n")


def test_a_bad_py_spy_line_is_skipped_and_counted_in_the_parser():
    parsed = parse_raw(BAD_LINES)
    assert parsed.bad_lines == 3 and [s.count for s in parsed.samples] == [40]


def test_a_bad_py_spy_line_costs_that_line_not_the_result(tmp_path):
    tag = f"bad-{uuid.uuid4().hex[:8]}"
    fake = write_exe(tmp_path / "fakebin" / "py-spy", f"""
        import sys
        out = sys.argv[sys.argv.index("-o") + 1]
        open(out, "w").write({BAD_LINES!r})
    """)
    with target(tag):
        rc, out, err, v = run_host(tmp_path, ["--match", tag, "--seconds", "1"],
                                   path=f"{fake.parent}:{SYSTEM_PATH}")
    assert v.status == "ok", (v, err)
    assert v.summary.startswith("good_leaf (g.py:7) ") and "3 bad py-spy lines skipped" in \
        v.summary


# --- 8: endless output -------------------------------------------------------------------------


ENDLESS = """
import os, sys
line = b"thread (1): MainThread;main (m.py:1);endless_leaf (e.py:2) 1\\n" * 1000
if sys.argv[1] == "dump":
    fd = 1
else:
    fd = os.open(sys.argv[sys.argv.index("-o") + 1], os.O_WRONLY | os.O_CREAT)
while True:
    os.write(fd, b"[" * 65536 if sys.argv[1] == "dump" else line)
"""


@pytest.mark.parametrize("mode", [["--seconds", "5"], []])
def test_endless_py_spy_output_stops_at_a_cap_and_says_so(tmp_path, mode):
    tag = f"endless-{uuid.uuid4().hex[:8]}"
    fake = write_exe(tmp_path / "fakebin" / "py-spy", ENDLESS)
    tmpdir = scratch(tmp_path)
    t0 = time.monotonic()
    with target(tag):
        rc, out, err, v = run_host(tmp_path, ["--match", tag, *mode],
                                   path=f"{fake.parent}:{SYSTEM_PATH}", tmpdir=tmpdir)
    assert time.monotonic() - t0 < 60
    assert "MiB cap" in v.summary, (v, err[-2000:])
    assert left_behind(tmpdir) == []  # no 2 GiB file left in /tmp
    assert len(out) < TRANSPORT_LIMIT_BYTES
    if mode:  # a record's lines up to the cap are kept
        assert v.status == "ok" and v.summary.startswith("endless_leaf (e.py:2)")


# --- 11: a realistic server's dumps -------------------------------------------------------------


DEEP_DUMP = """
import json, os, sys
pid = sys.argv[sys.argv.index("--pid") + 1]
pad = "x" * int(os.environ.get("FAKE_PAD", "20"))
lib = "/opt/sglang/venv/lib/python3.11/site-packages/sglang/srt/managers/"
threads = []
for t in range(10):
    frames = [{"name": f"leaf_{pid}_{t}" if depth == 0 else f"layer_{depth}_forward",
               "filename": lib + f"module_{depth}_{pad}.py",
               "module": None, "short_filename": f"module_{depth}_{pad}.py",
               "line": 100 + depth, "locals": None, "is_entry": depth == 39,
               "is_shim_entry": False}
              for depth in range(40)]
    threads.append({"pid": int(pid), "thread_id": 1000 + t, "thread_name": f"tp-worker-{t}",
                    "os_thread_id": 2000 + t, "active": True, "owns_gil": t == 0,
                    "frames": frames})
print(json.dumps(threads, indent=2))
"""


@pytest.mark.parametrize("pad", [20, 280])
def test_a_realistic_servers_dumps_all_come_back(tmp_path, monkeypatch, pad):
    """10 processes × 10 threads × 40 frames, ~128 KB of dump each: every
    process's stacks come back through the real transport, whole; with file
    names 280 characters long (2.8 MB of dumps) the frames nearest the root
    are cut first, every leaf is kept, and the verdict says what was cut."""
    tag = f"server-{uuid.uuid4().hex[:8]}"
    fake = write_exe(tmp_path / "fakebin" / "py-spy", DEEP_DUMP)
    monkeypatch.setenv("FAKE_PAD", str(pad))
    size = len(subprocess.run([str(fake), "dump", "--pid", "1"], capture_output=True).stdout)
    if pad == 20:
        assert 110_000 < size < 160_000  # as big as a TP-8 SGLang process's
    code, doc = _cli_probe(tmp_path, monkeypatch, fake, ["--match", tag], n=10, tag=tag)
    assert code == 0, doc
    assert len(doc["processes"]) == 10
    for p in doc["processes"]:
        assert p.get("error") is None and len(p["threads"]) == 10
        names = {f["name"] for f in p["frames"]}
        # every thread's leaf (the deepest frame) is kept
        assert {f"leaf_{p['pid']}_{t}" for t in range(10)} <= names
        assert ("layer_39_forward" in names) == (pad == 20)  # the root-most: cut first
    if pad == 20:
        assert doc["verdict_summary"] == ""  # nothing cut
    else:
        assert "stacks of 10 processes cut to their innermost" in doc["verdict_summary"]


def _cli_probe(tmp_path, monkeypatch, fake: Path, args: list[str], n: int, tag: str,
               env: dict[str, str] | None = None) -> tuple[int, dict]:
    """``perftriage probe --json stacks ARGS`` over the real local transport."""
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.setenv("TMPDIR", str(scratch(tmp_path)))
    config = tmp_path / "c.toml"
    config.write_text(f'[[hosts]]\nname = "localhost"\npython = "{host_python(tmp_path)}"\n')
    with target(tag, n=n, env=env):
        r = CliRunner().invoke(cli, ["--config", str(config), "probe", "--json", "stacks",
                                     *args])
    doc = json.loads(r.output)
    # what was cut, as the verdict's summary says it after its headline
    doc["verdict_summary"] = "; ".join(doc["detail"].get("notes", []))
    return r.exit_code, doc


# --- 12: a record too big for the transport ---------------------------------------------------


CJK_RECORD = """
import sys
out = sys.argv[sys.argv.index("-o") + 1]
lines = []
for i in range(500):
    frames = ";".join(f"层{j}_{'推理调度器' * 20} (服务/模块_{j}.py:{j + 1})" for j in range(4))
    lines.append(f"thread (1): MainThread;{frames};叶子_{i:03d} (叶.py:{i + 1}) {1000 - i}")
open(out, "w").write("\\n".join(lines) + "\\n")
"""


def test_a_record_too_big_for_the_transport_is_folded_to_fit(tmp_path, monkeypatch):
    tag = f"cjk-{uuid.uuid4().hex[:8]}"
    fake = write_exe(tmp_path / "fakebin" / "py-spy", CJK_RECORD)
    probe = subprocess.run([str(fake), "record", "-o", str(tmp_path / "r.raw")])
    assert probe.returncode == 0
    assert len((tmp_path / "r.raw").read_text()) > 250_000  # a 250k-character record
    code, doc = _cli_probe(tmp_path, monkeypatch, fake, ["--match", tag, "--seconds", "1"],
                           n=1, tag=tag)
    assert code == 0 and doc["verdict"] == "ok", doc["verdict_summary"]
    (p,) = doc["processes"]
    assert doc["top"]["name"] == "叶子_000"
    assert p["samples"] > 0
    # what did not fit is said, never passed over
    assert "not kept" in doc["verdict_summary"] or "innermost" in doc["verdict_summary"]


def test_a_result_line_cut_by_the_transport_says_so():
    line = result([{"pid": 7, "name": "python3", "rc": 0, "out": "x" * 1000, "err": ""}])
    cut = line[:400] + "\n[… 1,234,567 bytes not kept …]\n" + line[-300:]
    v = STACKS_KIND.interpret([], 0, cut, "")
    assert v.status == "error"
    assert "cut" in v.summary and "1,234,567 bytes" in v.summary


# --- 13: nothing left in /tmp -------------------------------------------------------------------


SLEEPER = """
import sys, time
time.sleep(300)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_killed_probe_leaves_no_temp_dir(tmp_path, sig):
    tag = f"killed-{uuid.uuid4().hex[:8]}"
    fake = write_exe(tmp_path / "fakebin" / "py-spy", SLEEPER)
    tmpdir = scratch(tmp_path)
    env = {"PATH": f"{fake.parent}:{SYSTEM_PATH}", "TMPDIR": str(tmpdir)}
    with target(tag):
        script = subprocess.Popen(host_command(tmp_path, ["--match", tag, "--seconds", "30"]),
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 20
        while not left_behind(tmpdir) and time.time() < deadline:
            time.sleep(0.05)
        assert left_behind(tmpdir), "the probe made no temp dir"
        sleepers = _children(script.pid)
        script.send_signal(sig)
        script.wait(timeout=20)
    assert left_behind(tmpdir) == []

    def alive() -> list[int]:
        out = []
        for p in sleepers:
            try:
                if "Z" not in Path(f"/proc/{p}/stat").read_text().split(")")[1][:3]:
                    out.append(p)
            except OSError:
                continue  # gone
        return out

    deadline = time.time() + 10  # the kill is sent at once; a loaded box reaps late
    while alive() and time.time() < deadline:
        time.sleep(0.05)
    assert not alive(), [(p, _cmdline(p)) for p in alive()]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:300]
    except OSError:
        return "?"


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


@needs_root
def test_a_day_old_temp_dir_of_the_probe_is_swept(tmp_path):
    """A probe killed with SIGKILL leaves its dir: the next run sweeps the
    probe's own dirs older than a day, nothing else."""
    tmpdir = scratch(tmp_path)
    old = time.time() - 2 * 86400
    made = {}
    for name in ("old", "young", "nobodys", "link", "file"):
        made[name] = tmpdir / f"perftriage-stacks-{name}"
    for name in ("old", "young", "nobodys"):
        made[name].mkdir()
        (made[name] / "1.raw").write_text("x")
    made["link"].symlink_to(made["young"])
    made["file"].write_text("not a dir")
    os.chown(made["nobodys"], NOBODY, NOBODY)
    for name in ("old", "nobodys", "file"):
        os.utime(made[name], (old, old))
    os.utime(made["link"], (old, old), follow_symlinks=False)
    rc, out, err, v = run_host(tmp_path, ["--match", f"nothing-{uuid.uuid4().hex}"],
                               tmpdir=tmpdir)
    assert v.status == "no-match", (v, err)
    assert left_behind(tmpdir) == sorted(f"perftriage-stacks-{n}"
                                         for n in ("file", "link", "nobodys", "young"))
    assert (made["young"] / "1.raw").exists()


def test_a_finished_probe_leaves_no_temp_dir(tmp_path):
    tag = f"done-{uuid.uuid4().hex[:8]}"
    fake = write_exe(tmp_path / "fakebin" / "py-spy", FAKE_OK % "")
    tmpdir = scratch(tmp_path)
    with target(tag):
        for mode in (["--seconds", "1"], []):
            rc, out, err, v = run_host(tmp_path, ["--match", tag, *mode],
                                       path=f"{fake.parent}:{SYSTEM_PATH}", tmpdir=tmpdir)
            assert v.status == "ok", (v, err)
    assert left_behind(tmpdir) == []


# --- 15: one line stays one line ----------------------------------------------------------------


def test_cr_lf_in_a_frame_name_never_splits_the_verdict_or_the_answer():
    """A dump's JSON carries a frame name with CR/LF (folded stacks cannot:
    a newline ends their line); the verdict and the answer stay one line each."""
    evil = "evil\r\nFAKE: 100 % of everything\x1b[2J"
    dump = json.dumps([{"thread_name": "Main\nThread", "os_thread_id": 1, "active": True,
                        "frames": [{"name": evil, "short_filename": "x\r.py", "line": 2}]}])
    out = result([{"pid": 7, "name": "python3 -c 'a\nb'\r", "rc": 0, "err": "", "out": dump}])
    v = STACKS_KIND.interpret([], 0, out, "")
    assert v.status == "ok" and v.summary.startswith("evil␍␊FAKE"), v.summary
    assert not any(c in v.summary for c in "\r\n\x1b"), v.summary
    lines = answer(probe_of([], v))
    assert any("evil␍␊FAKE" in line for line in lines)
    for line in lines:
        assert not any(c in line for c in "\r\n\x1b"), line


def test_the_seen_list_shows_other_processes_multiline_commands_on_one_line():
    seen = [[11, "python3 -c 'import x\nFAKE LINE'\r"], [12, "python3 \x1b]0;title\x07"]]
    out = result([], seen=seen, seen_total=2)
    v = STACKS_KIND.interpret(["--match", "sglang"], 1, out, "")
    lines = answer(probe_of(["--match", "sglang"], v))
    assert len(lines) == 2 and lines[0].startswith("seen: pid 11: ")
    for line in lines:
        assert not any(c in line for c in "\r\n\x1b\x07"), line
    assert script_result(out) is not None
