"""The seed investigation typed at full speed into the real cockpit in a
real terminal (tmux): every hypothesis, note and probe arrives in the
transcript exactly as typed — no lost, reordered or misdirected keys.

Each step is one ``tmux send-keys`` call (the whole burst at once, as a
fast typist or a paste delivers it), the next sent right after.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

TMUX = shutil.which("tmux")
PERFTRIAGE = str(Path(sys.executable).parent / "perftriage")

HYPOTHESES = [
    ("MoE runs on the slow flashinfer_cutlass path",
     "server_args say moe_runner_backend=flashinfer_cutlass; cutedsl is the fast one"),
    ("TP8 all-reduce dominates decode", "check NCCL ring vs NVLS; 8 x RTX PRO 6000, no NVLink"),
    ("KV cache too small for batch 64", ""),
]
PROBES = [
    ("i", ["flashinfer.jit.cutedsl"]),
    ("i", ["flashinfer.cute"]),
    ("g", ["cutedsl", "json"]),
    ("w", ["nsys"]),
    ("v", ["flashinfer-python"]),
]
NOTE = "restarting server with --moe-runner-backend flashinfer_cutedsl"


def tmux(sock: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([TMUX, "-L", sock, *args], capture_output=True, text=True, timeout=20)


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.skipif(TMUX is None and os.environ.get("CI") != "true",
                    reason="tmux not installed (scripts/test installs it; CI must have it)")
def test_the_seed_investigation_typed_at_full_speed(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[[hosts]]\nname = "localhost"\npython = "{sys.executable}"\n')
    sessions = tmp_path / "sessions"
    # one tmux server per run: tmp_path.name repeats across pytest runs and users
    # of this box run the suite at once (a shared server ran the keys in the other
    # run's cockpit: its transcript was never written here)
    sock = f"perftriage-keys-{os.getpid()}-{tmp_path.name}"
    cmd = f"{PERFTRIAGE} --config {cfg} --sessions-dir {sessions}"
    tmux(sock, "new-session", "-d", "-s", "t", "-x", "160", "-y", "45", cmd)
    try:
        wait_for(lambda: "Hypotheses" in tmux(sock, "capture-pane", "-p", "-t", "t").stdout,
                 60, "the cockpit")
        for title, note in HYPOTHESES:
            tmux(sock, "send-keys", "-t", "t", "H", title, "Tab", note, "C-s")
        for key, args in PROBES:
            tmux(sock, "send-keys", "-t", "t", key, " ".join(args), "Enter")
        tmux(sock, "send-keys", "-t", "t", "N", NOTE, "Enter")

        try:
            wait_for(lambda: "flashinfer_cutedsl" in tmux(sock, "capture-pane", "-p", "-t",
                                                          "t").stdout,
                     60, "the note on screen")
        finally:
            tmux(sock, "send-keys", "-t", "t", "q")

            def gone_or_asked() -> bool:
                if tmux(sock, "has-session", "-t", "t").returncode != 0:
                    return True
                if "Quit anyway" in tmux(sock, "capture-pane", "-p", "-t", "t").stdout:
                    tmux(sock, "send-keys", "-t", "t", "y")  # a probe still running: yes
                return False

            wait_for(gone_or_asked, 30, "the cockpit to quit")
    finally:
        tmux(sock, "kill-server")
        # the server is gone; its socket file is not (one per run: the name has the pid)
        tmux_dir = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
        (tmux_dir / sock).unlink(missing_ok=True)
    (path,) = sessions.glob("*.jsonl")
    events = [json.loads(line) for line in path.read_text().splitlines()[1:]
              if line.startswith("{")]
    added = [(e["title"], e.get("note", "")) for e in events if e["type"] == "hypothesis.added"]
    assert added == HYPOTHESES
    queued = [(e["kind"], e.get("args", [])) for e in events if e["type"] == "probe.queued"]
    kinds = {"i": "import", "g": "grep", "w": "which", "v": "version"}
    assert queued == [(kinds[k], args) for k, args in PROBES]
    assert [e["text"] for e in events if e["type"] == "note"] == [NOTE]
    assert not [e for e in events if e["type"] == "hypothesis.updated"]  # nothing misdirected
