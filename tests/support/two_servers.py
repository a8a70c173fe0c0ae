"""Two SGLang-named servers on one host, for the stacks probe's choice of
process: the server (listening on a port, with a busy child named like an
SGLang scheduler) and a decoy (not listening, busier, run by ``nobody`` when
the tests run as root). Each burns CPU in a function no other code is named
like, so a sample says whose process it read.

Both run as ``/usr/bin/python3 -m sglang.launch_server ROLE TAG`` from a
world-readable temporary folder holding ``sglang/launch_server.py`` (``nobody``
cannot read root's pyenv or the checkout), the sources below.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

SERVER_STALL = "server_scheduler_stall_q8z"
DECOY_STALL = "decoy_busy_stall_q8z"
PYTHON = shutil.which("python3", path="/usr/bin:/bin") or "python3"

_BURN = """
import hashlib, os, socket, subprocess, sys, time
def {name}():
    x = b"x"
    t = time.perf_counter()
    while time.perf_counter() - t < 0.05:
        x = hashlib.sha256(x).digest()
def loop(pause):
    while True:
        {name}()
        time.sleep(pause)
"""

# argv: server TAG -> listens, forks its scheduler child (which burns), idles;
# prints "ready PORT CHILD"
SERVER = """
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
child = os.fork()
if child == 0:
    s.close()
    loop(0.02)
print("ready", s.getsockname()[1], child, flush=True)
while True:
    time.sleep(1)
"""

# argv: decoy TAG -> busier than the server, listens nowhere
DECOY = """
print("ready", flush=True)
loop(0.0)
"""
SOURCE = (_BURN.format(name=SERVER_STALL) + _BURN.format(name=DECOY_STALL).replace(
    "def loop(pause)", "def decoy_loop(pause)") + "\nif sys.argv[1] == 'server':\n"
    + SERVER.replace("\n", "\n    ") + "\nelse:\n" + DECOY.replace("loop(", "decoy_loop(")
    .replace("\n", "\n    "))


@dataclass
class TwoServers:
    server: int  # the server's pid (it listens on `port`)
    child: int  # its scheduler child
    port: int
    decoy: int
    decoy_user: str  # "nobody" when root, else the tests' own user
    tag: str


def _start(argv: list[str]) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd="/",
                            start_new_session=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    assert line and line[0] == "ready", line
    return proc, line[1:]


@contextlib.contextmanager
def running() -> Iterator[TwoServers]:
    """Both running for the block, killed (with their children) at the end."""
    tag = f"q8z-{uuid.uuid4().hex[:10]}"
    root = os.geteuid() == 0
    as_nobody = ["runuser", "-u", "nobody", "--"] if root else []
    procs: list[subprocess.Popen[str]] = []
    folder = tempfile.mkdtemp(prefix="two-servers-")
    try:
        os.chmod(folder, 0o755)
        os.mkdir(os.path.join(folder, "sglang"), 0o755)
        for name, text in (("__init__.py", ""), ("launch_server.py", SOURCE)):
            with open(os.path.join(folder, "sglang", name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(folder, "sglang", name), 0o644)
        env = ["env", f"PYTHONPATH={folder}", "PYTHONDONTWRITEBYTECODE=1"]
        server, (port, child) = _start([*env, PYTHON, "-m", "sglang.launch_server", "server",
                                        tag])
        procs.append(server)
        decoy, _ = _start([*as_nobody, *env, PYTHON, "-m", "sglang.launch_server", "decoy", tag])
        procs.append(decoy)
        decoy_pid = _leaf(_leaf(decoy.pid))
        yield TwoServers(server.pid, int(child), int(port), decoy_pid,
                         "nobody" if root else "", tag)
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pid, 9)
            p.wait()
        shutil.rmtree(folder, ignore_errors=True)


def _leaf(pid: int) -> int:
    """The python under ``runuser`` (runuser forks it), or ``pid`` itself."""
    with contextlib.suppress(OSError):
        kids = open(f"/proc/{pid}/task/{pid}/children").read().split()
        if kids:
            return int(kids[0])
    return pid
