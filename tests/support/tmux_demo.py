"""``perftriage demo`` in a real terminal (tmux), driven key by key: what the
triage tmux tests share. Counts the keys pressed and the seconds since start."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from tests.ui.test_tmux_typing import PERFTRIAGE, tmux, wait_for


class TmuxDemo:
    def __init__(self, tmp_path: Path, *demo_args: str, size: tuple[int, int] = (160, 45)) -> None:
        self.sock = f"perftriage-demo-{os.getpid()}-{tmp_path.name}"
        sessions = tmp_path / "sessions"
        self.cmd = (f"env -u COLUMNS -u LINES {PERFTRIAGE} --sessions-dir {sessions} demo "
                    + " ".join(demo_args))
        self.size = size
        self.keys = 0
        self.started = 0.0

    def __enter__(self) -> "TmuxDemo":
        self.started = time.monotonic()
        tmux(self.sock, "new-session", "-d", "-s", "t", "-x", str(self.size[0]), "-y",
             str(self.size[1]), self.cmd)
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            tmux(self.sock, "send-keys", "-t", "t", "Escape", "Escape", "q")
            time.sleep(1)
            tmux(self.sock, "send-keys", "-t", "t", "y")
            wait_for(lambda: tmux(self.sock, "has-session", "-t", "t").returncode != 0, 20,
                     "the cockpit to quit")
        tmux(self.sock, "kill-server")
        tmux_dir = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
        (tmux_dir / self.sock).unlink(missing_ok=True)

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started

    def screen(self) -> str:
        return tmux(self.sock, "capture-pane", "-p", "-t", "t").stdout

    def wait_screen(self, check, what: str, timeout: float) -> str:
        """The screen once ``check(screen)`` holds; else an AssertionError with it."""
        seen: list[str] = []

        def ok() -> bool:
            seen[:] = [self.screen()]
            return check(seen[0])

        try:
            wait_for(ok, timeout, what)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the screen:\n{seen[0] if seen else ''}") from None
        return seen[0]

    def press(self, *keys: str) -> None:
        self.keys += len(keys)
        tmux(self.sock, "send-keys", "-t", "t", *keys)
