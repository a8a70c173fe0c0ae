"""The README's walkthrough, step 3, typed into the real demo in tmux: the
decode throughput comes from the log, an import and a which probe run, a
hypothesis gets the probe as evidence and a status, G with only the weights
typed records the gap (the form prefilled the simulated GPUs), a note, the
report, q; then `perftriage sessions` lists the recording and `replay
--latest` plays it back. When the README's step changes, change this test."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.cli.test_watch import TMUX, perftriage_in_tmux
from tests.ui.test_tmux_typing import tmux, wait_for

README_TITLE = "decode is launch-bound"
NOTE = "walked the README"


@pytest.mark.skipif(TMUX is None and os.environ.get("CI") != "true",
                    reason="tmux not installed (scripts/test installs it; CI must have it)")
def test_the_readme_demo_walkthrough(tmp_path):
    sock, base, sessions = perftriage_in_tmux(tmp_path, "readme")
    screen = lambda: tmux(sock, "capture-pane", "-p", "-t", "t").stdout  # noqa: E731
    keys = lambda *k: tmux(sock, "send-keys", "-t", "t", *k)  # noqa: E731
    tmux(sock, "new-session", "-d", "-s", "t", "-x", "160", "-y", "45", f"{base} demo")
    tmux(sock, "resize-window", "-t", "t", "-x", "160", "-y", "45")  # no client: keep the size
    try:
        try:
            wait_for(lambda: "tok/s" in screen(), 90, "decode throughput in the Logs pane")
            keys("3")
            keys("i", "json", "Enter")
            wait_for(lambda: " p4 " in screen(), 60, "the import probe")
            keys("w", "nsys", "Enter")
            wait_for(lambda: " p5 " in screen(), 60, "the which probe")
            keys("2", "End", "Enter")
            wait_for(lambda: "stdout" in screen() or "stderr" in screen(), 30, "probe output")
            keys("Escape")
            wait_for(lambda: "--- stdout" not in screen(), 30, "the output closed")
            keys("H")
            wait_for(lambda: "Tab next field" in screen() or "title" in screen(), 30,
                     "the hypothesis form")
            keys(README_TITLE, "C-s")
            wait_for(lambda: README_TITLE[:16] in screen(), 30, "the hypothesis")
            keys("4", "+")
            wait_for(lambda: "–         decode" not in screen(), 30, "the evidence")
            keys("s")
            wait_for(lambda: "○ open" not in screen(), 30, "the status stepped")
            keys("G")
            # prefilled from the simulated GPUs and the server's model (README: ⏎ records it)
            wait_for(lambda: "server sglang-sim: active_params_" in screen(), 30,
                     "the gap form, prefilled")
            keys("Enter")
            wait_for(lambda: "gap: none computed" not in screen(), 30, "the gap recorded")
            keys("N", NOTE, "Enter")
            wait_for(lambda: NOTE in screen(), 30, "the note")
            keys("M")
            wait_for(lambda: "report" in screen().lower(), 30, "the report written")
            keys("q")
            wait_for(lambda: "Hypotheses" not in screen() or "quit" in screen().lower(), 30,
                     "quitting")
            if "Hypotheses" in screen():  # asked once (a probe or the server still runs)
                keys("y")
            wait_for(lambda: "transcript:" in screen(), 60, "the transcript's path on exit")
        except AssertionError:
            print(screen())
            raise
    finally:
        tmux(sock, "kill-server")
    cmd = base.split()
    listed = subprocess.run([*cmd, "sessions"], capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0 and "demo" in listed.stdout, listed.stdout + listed.stderr
    played = subprocess.run([*cmd, "replay", "--latest", "--json"], capture_output=True,
                            text=True, timeout=120)
    assert played.returncode == 0, played.stderr
    state = json.loads(played.stdout)
    text = json.dumps(state)
    assert README_TITLE in text and NOTE in text and '"active_params_b": 40.0' in text
    (hyp,) = [h for h in state["hypotheses"] if h["title"] == README_TITLE]
    assert hyp["status"] != "open" and hyp["evidence"]
