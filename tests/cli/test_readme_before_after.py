"""The README's walkthrough, step 3, its stacks and before/after lines, typed
into the real demo in tmux (issue 41, items 1 to 4): `k` ⏎ records the
engine's Python for 3 s (not a one-sample dump) and `T` shows the top frame's
share of wall time beside its share of the busy samples; Esc returns to the
main screen; `b` ⏎ marks a baseline; `S` lists the placeholders with their
values and `sglang-sim backend=flashinfer_cutedsl` ⏎ restarts the server;
the Logs pane then reads the verdict. When those README lines change, change
this test (test_readme_walkthrough.py covers the step's other lines)."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from tests.cli.test_watch import TMUX, perftriage_in_tmux
from tests.support.tmux_demo import engine_figures, transcript_tail
from tests.ui.test_tmux_typing import tmux, wait_for


def elapsed(screen: str) -> float:
    """The session's age the header shows (``46.1s``, ``2m35s``), in seconds."""
    first = screen.splitlines()[0] if screen else ""
    m = re.search(r"(?:(\d+)m)?(\d+(?:\.\d+)?)s\s*$", first)
    return 60 * int(m.group(1) or 0) + float(m.group(2)) if m else 0.0


@pytest.mark.skipif(TMUX is None and os.environ.get("CI") != "true",
                    reason="tmux not installed (scripts/test installs it; CI must have it)")
@pytest.mark.timeout(360)  # the demo's start, a 3 s record, 30 s after the restart
def test_the_readme_stacks_and_before_after_lines(tmp_path):
    sock, base, sessions = perftriage_in_tmux(tmp_path, "readme-ba")
    screen = lambda: tmux(sock, "capture-pane", "-p", "-t", "t").stdout  # noqa: E731
    flat = lambda: " ".join(screen().split())  # noqa: E731  (lines joined: wrapped text)
    keys = lambda *k: tmux(sock, "send-keys", "-t", "t", *k)  # noqa: E731
    # COLUMNS/LINES: under pytest the app read 80x25 from its pane (Textual asks
    # shutil, which reads them first); the verdict is cut at 80 columns
    tmux(sock, "new-session", "-d", "-s", "t", "-x", "160", "-y", "45",
         f"env COLUMNS=160 LINES=45 {base} demo")
    tmux(sock, "resize-window", "-t", "t", "-x", "160", "-y", "45")
    try:
        try:
            wait_for(lambda: "tok/s" in screen(), 90, "decode throughput in the Logs pane")
            keys("k")
            wait_for(lambda: "probe: stacks" in screen(), 30, "the stacks form")
            assert "--seconds 3" in screen()  # a short record, not a one-sample dump
            assert "where server sglang-sim runs" in screen()  # the server's host
            keys("Enter")
            if shutil.which("py-spy"):
                wait_for(lambda: any("✔" in ln and "stacks --" in ln for ln in screen().splitlines()),
                         60, "the record in Probes")
                keys("T")
                wait_for(lambda: "of all samples (wall time)" in flat(), 30, "the Stacks view")
                assert "record 3 s at 100 Hz" in screen() and "of the busy ones" in screen()
                keys("Escape")
                wait_for(lambda: "Hypotheses" in screen(), 30, "back on the main screen")
            # a baseline of the last 30 s wants 30 s of the engine's scrapes behind it
            wait_for(lambda: elapsed(screen()) >= 45, 90, "45 s of the session")
            keys("b")
            wait_for(lambda: "baseline" in screen() and "the last 30 s" in screen(), 30,
                     "the baseline form")
            keys("Enter")
            wait_for(lambda: "the last 30 s" not in screen(), 30, "the baseline form closed")
            wait_for(lambda: "vs baseline" in screen(), 60, "the Logs pane against the baseline")
            keys("S")
            wait_for(lambda: "server: start / restart" in screen(), 30, "the restart form")
            assert "backend=flashinfer_cutlass" in flat()  # each placeholder, its value
            assert "last run's extra arguments: none" in flat()
            keys("backend=flashinfer_cutedsl", "Enter")
            wait_for(lambda: "▲ improved" in screen(), 150, "the verdict after the restart")
            keys("q")
            wait_for(lambda: "Hypotheses" not in screen() or "quit" in screen().lower(), 30,
                     "quitting")
            if "Hypotheses" in screen():  # asked once (the server still runs)
                keys("y")
            wait_for(lambda: "transcript:" in screen(), 60, "the transcript's path on exit")
        except AssertionError:
            print(tmux(sock, "display", "-p", "-t", "t", "#{window_width}x#{window_height}").stdout)
            print(screen())
            print(transcript_tail(sessions))
            print("the engine's scrapes and the server's events (t type source state "
                  "generation_tokens gen_throughput):")
            print(engine_figures(sessions))
            raise
    finally:
        tmux(sock, "kill-server")
