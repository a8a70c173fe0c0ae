"""Keys that move focus, typed in bursts into the real cockpit in a real
terminal (tmux) while every core of the box is busy: each key lands in the
pane or field it was typed for.

Each step is one ``tmux send-keys`` call (the whole burst at once). The
resulting state is read from the transcript the cockpit wrote, and from the
screen where a key opens a dialog.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ui.test_tmux_typing import PERFTRIAGE, TMUX, tmux, wait_for

BURN = "import time\nend = time.monotonic() + 300\nwhile time.monotonic() < end: pass\n"


@contextlib.contextmanager
def loaded_box():
    """One busy-looping process per core, for the duration."""
    burners = [subprocess.Popen([sys.executable, "-c", BURN])
               for _ in range(os.cpu_count() or 2)]
    try:
        yield
    finally:
        for p in burners:
            p.kill()
            p.wait()


class TmuxCockpit:
    def __init__(self, tmp_path: Path, width: int = 160, height: int = 45) -> None:
        cfg = tmp_path / "config.toml"
        cfg.write_text(f'[[hosts]]\nname = "localhost"\npython = "{sys.executable}"\n')
        self.sessions = tmp_path / "sessions"
        self.sock = f"perftriage-focus-{os.getpid()}-{tmp_path.name}"
        cmd = f"{PERFTRIAGE} --config {cfg} --sessions-dir {self.sessions}"
        tmux(self.sock, "new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), cmd)
        self.wait_screen("Hypotheses", 60)

    def screen(self) -> str:
        return tmux(self.sock, "capture-pane", "-p", "-t", "t").stdout

    def wait_screen(self, text: str, timeout: float = 30) -> None:
        wait_for(lambda: text in self.screen(), timeout, repr(text))

    def keys(self, *keys: str) -> None:
        """One burst: a single send-keys call."""
        tmux(self.sock, "send-keys", "-t", "t", *keys)

    def events(self) -> list[dict]:
        (path,) = self.sessions.glob("*.jsonl")
        return [json.loads(line) for line in path.read_text().splitlines()[1:]
                if line.startswith("{")]

    def wait_event(self, kind: str, count: int = 1, timeout: float = 30) -> list[dict]:
        found: list[dict] = []

        def seen() -> bool:
            found[:] = [e for e in self.events() if e["type"] == kind]
            return len(found) >= count

        wait_for(seen, timeout, f"{count} x {kind}")
        return found

    def quit(self) -> None:
        try:
            self.keys("Escape", "Escape")  # out of any dialog left open by a failure
            time.sleep(0.5)
            self.keys("q")
            with contextlib.suppress(AssertionError):
                wait_for(lambda: "quit" in self.screen().lower()
                         or tmux(self.sock, "has-session", "-t", "t").returncode != 0,
                         10, "a quit question")
            self.keys("y")
            wait_for(lambda: tmux(self.sock, "has-session", "-t", "t").returncode != 0, 30,
                     "the cockpit to quit")
        finally:
            tmux(self.sock, "kill-server")
            tmux_dir = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
            (tmux_dir / self.sock).unlink(missing_ok=True)


needs_tmux = pytest.mark.skipif(
    TMUX is None and os.environ.get("CI") != "true",
    reason="tmux not installed (scripts/test installs it; CI must have it)")


@needs_tmux
def test_keys_that_move_focus_land_where_they_were_typed_for(tmp_path):
    with loaded_box():
        app = TmuxCockpit(tmp_path)
        try:
            # Enter in the title moves to the note before the note's keys are read
            app.keys("H")
            app.wait_screen("what might explain the gap")
            time.sleep(1)
            app.keys("alpha title", "Enter", "beta note", "Enter")
            (added,) = app.wait_event("hypothesis.added")
            assert (added["title"], added.get("note")) == ("alpha title", "beta note")

            app.keys("w", "nsys", "Enter")
            app.wait_event("probe.finished")

            # 2 then d: d is the Probes pane's (remove the probe), not the
            # Hypotheses pane's (delete the hypothesis)
            app.keys("4")
            app.keys("2", "d")
            app.wait_event("probe.removed")
            assert "Delete hypothesis" not in app.screen()

            # from Hosts, 4 then e edits the selected hypothesis: every key of
            # the burst lands in the edit form
            app.keys("1")
            app.keys("4", "e", "End", *["BSpace"] * 6, "OTHERS", "Tab", " (edited)", "Enter")
            (updated,) = app.wait_event("hypothesis.updated")
            assert updated["title"] == "alphaOTHERS"
            assert updated["note"] == "beta note (edited)"

            # shift+tab from Hosts wraps to the Hypotheses table: s steps its status
            app.keys("1")
            app.keys("BTab", "s")
            updates = app.wait_event("hypothesis.updated", 2)
            assert updates[-1].get("status") not in (None, "open")

            # tab from Hosts reaches the Probes table: r reruns the (only) probe
            app.keys("w", "nvidia-smi", "Enter")
            app.wait_event("probe.finished", 2)
            app.keys("1")
            app.keys("Tab", "r")
            queued = app.wait_event("probe.queued", 3)
            assert queued[-1]["args"] == ["nvidia-smi"]

            # hypotheses in bursts, no pause after H: Enter moves title -> note each time
            for i in range(3):
                app.keys("H", f"burst {i} title", "Enter", f"burst {i} note", "Enter")
            added = app.wait_event("hypothesis.added", 4)
            assert [(e["title"], e.get("note")) for e in added[1:]] == [
                (f"burst {i} title", f"burst {i} note") for i in range(3)]
        finally:
            app.quit()
    events = app.events()
    assert [e["title"] for e in events if e["type"] == "hypothesis.added"] == [
        "alpha title", "burst 0 title", "burst 1 title", "burst 2 title"]
    assert not [e for e in events if e["type"] == "hypothesis.deleted"]
