"""The real cockpit in tmux, killed with kill -9 in the middle of a run and
started again with the same --session NAME: the hypothesis and the note
typed before the kill are on the screen again, and new work appends."""

from __future__ import annotations

import os
import signal

import pytest

from perftriage.core.model import events as ev
from perftriage.core.store import investigations as inv
from perftriage.core.store import transcript
from tests.ui.test_tmux_typing import TMUX, tmux, wait_for
from tests.cli.test_watch import perftriage_in_tmux

TITLE = "MoE runs on the slow flashinfer_cutlass path"
NOTE = "before the crash"


@pytest.mark.skipif(TMUX is None and os.environ.get("CI") != "true",
                    reason="tmux not installed (scripts/test installs it; CI must have it)")
def test_kill_9_then_the_same_session_name_continues(tmp_path):
    sock, base, sessions = perftriage_in_tmux(tmp_path, "restart")
    cmd = f"{base} -s 'moe gap'"
    screen = lambda: tmux(sock, "capture-pane", "-p", "-t", "t").stdout  # noqa: E731
    try:
        tmux(sock, "new-session", "-d", "-s", "t", "-x", "160", "-y", "45", cmd)
        wait_for(lambda: "Hypotheses" in screen(), 60, "the cockpit")
        tmux(sock, "send-keys", "-t", "t", "H", TITLE, "Tab", "from the server args", "C-s")
        tmux(sock, "send-keys", "-t", "t", "N", NOTE, "Enter")
        try:
            wait_for(lambda: NOTE in screen() and "MoE runs on the" in screen(), 30,
                     "the hypothesis and the note")
        except AssertionError:
            print(screen())
            raise
        path = inv.path_for("moe gap", sessions)
        wait_for(lambda: NOTE.encode() in path.read_bytes(), 10, "the note on disk")
        pid = int(tmux(sock, "display-message", "-p", "-t", "t", "#{pane_pid}").stdout)
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: tmux(sock, "has-session", "-t", "t").returncode != 0, 30,
                 "the killed cockpit's window to close")

        tmux(sock, "new-session", "-d", "-s", "t", "-x", "160", "-y", "45", cmd)
        wait_for(lambda: "Hypotheses" in screen(), 60, "the cockpit again")
        wait_for(lambda: NOTE in screen() and "MoE runs on the" in screen(), 30,
                 "the hypothesis and the note after the restart")
        tmux(sock, "send-keys", "-t", "t", "N", "after the crash", "Enter")
        wait_for(lambda: "after the crash" in screen(), 30, "the new note")
        tmux(sock, "send-keys", "-t", "t", "q")
        wait_for(lambda: tmux(sock, "has-session", "-t", "t").returncode != 0, 30,
                 "the cockpit to quit")
    finally:
        tmux(sock, "kill-server")
    tr = transcript.read(path)
    assert tr.problems == []
    assert [e.segment for e in tr.events if isinstance(e, ev.SegmentStarted)] == [1, 2]
    assert [e.title for e in tr.events if isinstance(e, ev.HypothesisAdded)] == [TITLE]
    assert [e.text for e in tr.events if isinstance(e, ev.NoteAdded)
            and "crash" in e.text] == [NOTE, "after the crash"]
    assert isinstance(tr.events[-1], ev.SessionEnded)
