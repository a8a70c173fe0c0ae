"""The H200 sequence with the real cockpit in tmux: `perftriage -s h200-moe`
follows the server log its config names, is killed with kill -9 while the
server writes on, and is started again with the same name. The second run
reads the log on from the line after the last one recorded (nothing read
twice, nothing lost), and the report counts each decode line once."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from perftriage.core.model import events as ev
from perftriage.core.report.from_file import render_file
from perftriage.core.store import investigations as inv
from perftriage.core.store import transcript
from tests.reliability.test_log_resume import DECODE, LINES, MORE, _throughput_rows, _write
from tests.ui.test_tmux_typing import TMUX, tmux, wait_for

TUI = os.path.join(os.path.dirname(__file__), "..", "..", "tui")
# written while no cockpit ran (its own times and throughputs: a line of its own)
AFTER = [ln.replace("09:20:0", "09:30:0").replace("(token/s): 10", "(token/s): 20") for ln in MORE]


@pytest.mark.skipif(TMUX is None and os.environ.get("CI") != "true",
                    reason="tmux not installed (scripts/test installs it; CI must have it)")
def test_kill_9_mid_follow_then_the_next_run_reads_each_line_once(tmp_path):
    log = tmp_path / "server.log"
    _write(log, LINES)
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[[hosts]]\nname = "localhost"\npython = "{sys.executable}"\n'
                   f'logs = ["{log}"]\n')
    sessions = tmp_path / "sessions"
    path = inv.path_for("h200-moe", sessions)
    sock = f"perftriage-logkill-{os.getpid()}-{tmp_path.name}"
    cmd = (f"env PYTHONPATH={os.path.abspath(TUI)} {sys.executable} -m perftriage --config {cfg} "
           f"--sessions-dir {sessions} -s h200-moe")

    def recorded(text: str) -> bool:
        return path.exists() and text.encode() in path.read_bytes()

    try:
        tmux(sock, "new-session", "-d", "-s", "t", "-x", "160", "-y", "45", cmd)
        wait_for(lambda: recorded("fired up and ready"), 60, "the log's lines in the transcript")
        _write(log, MORE, "a")  # the server writes on
        wait_for(lambda: recorded("(token/s): 103.00"), 30, "the new lines in the transcript")
        pid = int(tmux(sock, "display-message", "-p", "-t", "t", "#{pane_pid}").stdout)
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: tmux(sock, "has-session", "-t", "t").returncode != 0, 30,
                 "the killed cockpit's window to close")

        _write(log, AFTER, "a")  # and on, while no cockpit runs
        tmux(sock, "new-session", "-d", "-s", "t", "-x", "160", "-y", "45", cmd)
        wait_for(lambda: recorded("(token/s): 203.00"), 60, "the lines written meanwhile")
        tmux(sock, "send-keys", "-t", "t", "q")
        wait_for(lambda: tmux(sock, "has-session", "-t", "t").returncode != 0, 30,
                 "the cockpit to quit")
    finally:
        tmux(sock, "kill-server")
    events = transcript.read(path).events
    sids = {e.source_id for e in events if isinstance(e, ev.LogSourceOpened)}
    lines = [ln for e in events if isinstance(e, ev.LogLines) for ln in e.lines]
    assert len(sids) == 1 and lines == LINES + MORE + AFTER  # once each, in order
    positions = [e.line for e in events if isinstance(e, ev.LogFilePosition)
                 and e.line is not None]
    assert positions == [0, len(LINES) + len(MORE)]
    assert _throughput_rows(render_file(path)) == [
        f"- localhost:{log}: {len(DECODE) + len(MORE) + len(AFTER)} decode lines"]
