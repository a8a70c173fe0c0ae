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
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ui.test_tmux_typing import PERFTRIAGE, TMUX, tmux, wait_for

SGLANG_LOG = Path(__file__).parents[1] / "fixtures" / "logs" / "sglang-0.5.23-tp8.log"
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
    def __init__(self, tmp_path: Path, width: int = 160, height: int = 45,
                 logs: tuple[Path, ...] = ()) -> None:
        cfg = tmp_path / "config.toml"
        followed = f"logs = {json.dumps([str(p) for p in logs])}\n" if logs else ""
        cfg.write_text(f'[[hosts]]\nname = "localhost"\npython = "{sys.executable}"\n'
                       + followed)
        self.sessions = tmp_path / "sessions"
        self.sock = f"perftriage-focus-{os.getpid()}-{tmp_path.name}"
        # COLUMNS/LINES (set under pytest) would win over the terminal's own size
        cmd = f"env -u COLUMNS -u LINES {PERFTRIAGE} --config {cfg} --sessions-dir {self.sessions}"
        tmux(self.sock, "new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), cmd)
        self.wait_screen("Hypotheses", 60)

    def screen(self) -> str:
        return tmux(self.sock, "capture-pane", "-p", "-t", "t").stdout

    def wait_screen(self, text: str, timeout: float = 30) -> None:
        self.wait_screen_shows(lambda screen: text in screen, repr(text), timeout)

    def wait_screen_shows(self, check, what: str, timeout: float = 30) -> None:
        try:
            wait_for(lambda: check(self.screen()), timeout, what)
        except AssertionError as exc:  # say what was on screen instead
            raise AssertionError(f"{exc}; the screen:\n{self.screen()}") from None

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


@needs_tmux
def test_keys_that_open_a_dialog_or_zoom_hand_the_keys_behind_them_over(tmp_path):
    """``/``, ``E``, ``N``, ``G`` open a dialog: what is typed right behind
    them is the dialog's. ``z`` and ``?`` then Esc leave the pane focused:
    the next key is the pane's."""
    log = tmp_path / "server.log"
    shutil.copy(SGLANG_LOG, log)
    with loaded_box():
        app = TmuxCockpit(tmp_path, logs=(log,))
        try:
            app.keys("H", "gamma title", "Enter", "gamma note", "Enter")
            app.wait_event("hypothesis.added")
            app.keys("w", "nsys", "Enter")
            app.wait_event("probe.finished")

            # 3 then /: the text is the search's, not the Logs pane's keys
            app.keys("1")
            app.keys("3", "/decode", "Enter")
            app.wait_screen("search /decode/")

            # E in Hypotheses opens the evidence picker: its search, the
            # return to the list and + (for) all land in the picker; Esc closes it
            app.keys("1")
            app.keys("4", "E", "/nsys", "Enter", "+")
            (linked,) = app.wait_event("evidence.linked")
            assert (linked["hyp_id"], linked["ref_id"], linked["stance"]) == ("h1", "p1", "for")
            app.keys("Escape")  # the picker stays open for more evidence until Esc
            app.wait_screen_shows(lambda s: "evidence for:" not in s, "the picker closed", 5)

            # z maximizes the Hypotheses pane; s right behind steps the status there
            app.keys("1")
            app.keys("4", "z", "s")
            (stepped,) = app.wait_event("hypothesis.updated")
            assert stepped.get("status") not in (None, "open")
            app.wait_screen_shows(lambda s: "Hypotheses" in s
                                  and "Probes" not in s and "Hosts" not in s, "only Hypotheses")
            app.keys("z")
            app.wait_screen("Probes")

            # ? opens the keys help, ? closes it, s is the Hypotheses pane's again
            app.keys("?", "?", "s")
            app.wait_event("hypothesis.updated", 2)
            # the pane acted, so the help is gone; the terminal may repaint a moment later
            app.wait_screen_shows(lambda s: "(Esc closes)" not in s, "the keys help closed", 5)
            # the same with Esc. Esc ends its burst: ESC then s in one write is
            # what a terminal sends for alt+s, so Textual reads it as that
            app.keys("?", "Escape")
            app.keys("s")
            app.wait_event("hypothesis.updated", 3)
            # the pane acted, so the help is gone; the terminal may repaint a moment later
            app.wait_screen_shows(lambda s: "(Esc closes)" not in s, "the keys help closed", 5)

            # N then the note, at once: all of it in the note form
            app.keys("N", "some note", "Enter")
            (note,) = app.wait_event("note")
            assert note["text"] == "some note"

            # G opens the gap form: figures typed right behind land in its fields
            # (ms/token is prefilled from the log: ctrl+u clears it)
            app.keys("G", "16", *["Tab"] * 5, "4800", "Tab", "Tab", "C-u", "5", "Enter")
            (gap,) = app.wait_event("gap.computed")
            assert gap["inputs"] == {"weights_gb": 16.0, "gpus": 1, "bandwidth_gbs": 4800.0,
                                     "measured_ms": 5.0}
        finally:
            app.quit()
