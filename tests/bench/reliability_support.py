"""What the rows of the reliability trials share: the CLI run in a
subprocess as a user runs it (this checkout's package), and what a clean
refusal looks like (exit 2, one line, no traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO / "tui")}


def cli(*args: str, cwd: Path | None = None, preexec=None, timeout: float = 60):
    return subprocess.run([sys.executable, "-m", "perftriage", *args], capture_output=True,
                          text=True, timeout=timeout, env=ENV, cwd=cwd,
                          stdin=subprocess.DEVNULL, preexec_fn=preexec)


def clean_exit_2(r) -> bool:
    return r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
