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

