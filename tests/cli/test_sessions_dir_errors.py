"""A sessions directory the transcript cannot be written to (read-only, no
space or over a file-size limit): one line naming the directory and why,
a hint at ``--sessions-dir``, exit 2, and no empty transcript left behind."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_cockpit(sessions: Path, tmp_path: Path, preexec=None) -> subprocess.CompletedProcess:
    config = tmp_path / "c.toml"
    config.write_text("")
    env = {**os.environ, "PYTHONPATH": str(REPO / "tui")}
    return subprocess.run([sys.executable, "-m", "perftriage", "--config", str(config),
                           "--sessions-dir", str(sessions)],
                          capture_output=True, text=True, timeout=60, env=env,
                          stdin=subprocess.DEVNULL, preexec_fn=preexec)


@contextlib.contextmanager
def read_only(directory: Path):
    """Read-only even for root: the immutable attribute (root), else mode 0555."""
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(directory)], capture_output=True).returncode:
            pytest.skip("chattr +i not supported here")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(directory)], check=False)
    else:
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o700)


def assert_clean_failure(r: subprocess.CompletedProcess, sessions: Path, why: str) -> None:
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert str(sessions) in lines[0] and why in lines[0] and "--sessions-dir" in lines[0], lines[0]
    assert list(sessions.iterdir()) == []  # no 0-byte transcript


def test_read_only_sessions_dir(tmp_path):
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    with read_only(sessions):
        r = run_cockpit(sessions, tmp_path)
        assert_clean_failure(r, sessions, "cannot write a transcript")


def test_sessions_dir_that_cannot_take_the_header(tmp_path):
    """Over RLIMIT_FSIZE the header write fails after the file was created
    (as on a full disk): the empty file is removed."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()

    def no_room() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    r = run_cockpit(sessions, tmp_path, preexec=no_room)
    assert_clean_failure(r, sessions, "File too large")


def test_sessions_dir_below_a_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = run_cockpit(blocker / "sessions", tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert str(blocker / "sessions") in r.stderr and "--sessions-dir" in r.stderr
