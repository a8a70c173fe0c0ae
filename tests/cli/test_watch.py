"""`perftriage watch`: the player follows a transcript being written (tail -F:
new events, new runs, a torn line completed later, a replaced file), scrubs
back and returns to live, and never writes; a watcher in tmux shows a note
typed into a live cockpit in another tmux window."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.model import events as ev
from perftriage.core.store import investigations as inv
from perftriage.services.investigation.named import open_investigation
from perftriage.services.investigation.watch import CHECK_INTERVAL_S, Watcher
from tests.ui.test_tmux_typing import tmux
from tests.ui.test_tmux_typing import wait_for as wait_until

TMUX = shutil.which("tmux")
TUI = str(Path(__file__).resolve().parents[2] / "tui")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def tick(self, watcher: Watcher) -> int:
        self.now += CHECK_INTERVAL_S
        return watcher.tick()


def _notes(watcher: Watcher) -> list[str]:
    return [n.text for n in watcher.session.state.notes]


def test_the_watcher_follows_scrubs_back_and_returns_to_live(tmp_path):
    s = open_investigation("live one", tmp_path, ["localhost"])
    s.emit(ev.NoteAdded(text="n1"))
    s.writer.sync()
    clock = Clock()
    w = Watcher(inv.path_for("live one", tmp_path), clock=clock)
    w.go_live()
    assert _notes(w) == ["n1"] and w.live
    s.emit(ev.NoteAdded(text="n2"))
    s.emit(ev.HypothesisAdded(hyp_id=s.new_id("h"), title="launch bound"))
    s.writer.sync()
    assert clock.tick(w) == 2  # both new events applied at the next check
    assert _notes(w) == ["n1", "n2"] and w.session.state.hypotheses[0].title == "launch bound"

    # scrub back: no longer live; new events are indexed but not shown
    w.leave_live()
    w.player.seek(1)
    assert _notes(w) == []
    s.emit(ev.NoteAdded(text="n3"))
    s.writer.sync()
    clock.tick(w)
    assert _notes(w) == [] and not w.live
    w.go_live()  # end: back to live, the newest event shown
    assert _notes(w) == ["n1", "n2", "n3"]

    # the cockpit quits and the investigation is continued: a new run, followed
    s.close()
    s2 = open_investigation("live one", tmp_path, ["localhost"])
    s2.emit(ev.NoteAdded(text="second run"))
    s2.writer.sync()
    clock.tick(w)
    assert _notes(w)[-1] == "second run" and [seg.segment for seg in
                                              w.session.state.segments] == [1, 2]
    s2.close()


def test_a_line_being_written_is_read_once_whole_and_a_replaced_file_again(tmp_path):
    s = open_investigation("torn", tmp_path, [])
    s.emit(ev.NoteAdded(text="whole"))
    s.close()
    path = inv.path_for("torn", tmp_path)
    clock = Clock()
    w = Watcher(path, clock=clock)
    w.go_live()
    line = ev.encode(ev.NoteAdded(text="half then whole", t=5.0, wall=1.0)) + b"\n"
    with open(path, "ab") as fh:
        fh.write(line[:10])
        fh.flush()
        clock.tick(w)
        assert _notes(w) == ["whole"] and w.timeline.problems == []  # not a corrupt line
        fh.write(line[10:])
    clock.tick(w)
    assert _notes(w) == ["whole", "half then whole"]
    # replaced under its name (rotated): read again from the start, like tail -F
    replacement = tmp_path / "new.jsonl"
    shutil.copyfile(path, replacement)
    with open(replacement, "ab") as fh:
        fh.write(ev.encode(ev.NoteAdded(text="after rotation", t=6.0, wall=2.0)) + b"\n")
    os.replace(replacement, path)
    clock.tick(w)
    assert _notes(w) == ["whole", "half then whole", "after rotation"] and w.reopened == 1


def test_the_watcher_takes_nothing_and_writes_nothing(tmp_path):
    s = open_investigation("ro", tmp_path, [])
    s.emit(ev.NoteAdded(text="kept"))
    s.close()
    path = inv.path_for("ro", tmp_path)
    before = path.read_bytes()
    w = Watcher(path)
    w.go_live()
    w.session.emit(ev.NoteAdded(text="a watcher's note"))
    w.session.emit(ev.ProbeQueued(probe_id="p9", host="localhost", kind="shell", args=["id"]))
    assert _notes(w) == ["kept"] and not w.session.state.probes
    assert not w.session.mode.annotations and not w.session.mode.writes
    assert w.close() is None
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == [path.name]


def test_watch_of_an_unknown_name_is_a_usage_error(tmp_path):
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "watch", "nope"])
    assert r.exit_code == 2 and "no investigation 'nope'" in r.output


def perftriage_in_tmux(tmp_path, what: str) -> tuple[str, str, Path]:
    """(tmux socket name, the perftriage command line of this checkout with
    a localhost config and its own sessions dir, that dir) for a test."""
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[[hosts]]\nname = "localhost"\npython = "{sys.executable}"\n')
    sessions = tmp_path / "sessions"
    sock = f"perftriage-{what}-{os.getpid()}-{tmp_path.name}"
    base = (f"env PYTHONPATH={TUI} {sys.executable} -m perftriage --config {cfg} "
            f"--sessions-dir {sessions}")
    return sock, base, sessions


@pytest.mark.skipif(TMUX is None and os.environ.get("CI") != "true",
                    reason="tmux not installed (scripts/test installs it; CI must have it)")
def test_a_watcher_in_tmux_shows_a_note_typed_into_the_live_cockpit(tmp_path):
    sock, base, sessions = perftriage_in_tmux(tmp_path, "watch")
    name = "'team run: é ../x'"
    tmux(sock, "new-session", "-d", "-s", "cockpit", "-x", "160", "-y", "45",
         f"{base} -s {name}")
    try:
        screen = lambda s: tmux(sock, "capture-pane", "-p", "-t", s).stdout  # noqa: E731
        wait_until(lambda: "Hypotheses" in screen("cockpit"), 60, "the cockpit")
        tmux(sock, "new-session", "-d", "-s", "watcher", "-x", "160", "-y", "45",
             f"{base} watch {name}")
        wait_until(lambda: "WATCH" in screen("watcher"), 60, "the watcher")
        assert "LIVE" in screen("watcher")
        note = "restarting with cutedsl"
        tmux(sock, "send-keys", "-t", "cockpit", "N", note, "Enter")
        wait_until(lambda: note in screen("watcher"), 30, "the note in the watcher")
        # the watcher refuses to take a note of its own: it is read-only
        tmux(sock, "send-keys", "-t", "watcher", "N")
        wait_until(lambda: "watch: read-only" in screen("watcher"), 10, "the refusal")
        tmux(sock, "send-keys", "-t", "watcher", "q")
        wait_until(lambda: tmux(sock, "has-session", "-t", "watcher").returncode != 0, 30,
                   "the watcher to quit")
        tmux(sock, "send-keys", "-t", "cockpit", "q")
        wait_until(lambda: tmux(sock, "has-session", "-t", "cockpit").returncode != 0, 30,
                   "the cockpit to quit")
    finally:
        tmux(sock, "kill-server")
    files = list(sessions.iterdir())
    assert len(files) == 1  # the watcher wrote nothing of its own
    text = files[0].read_text()
    assert text.count('"restarting with cutedsl"') == 1


def test_the_watch_screen(snap_compare):
    """The cockpit's panes at the newest event, the bar saying WATCH ● LIVE."""
    from perftriage.ui.app import PerftriageApp
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts.registry import HostRegistry
    from tests.support.helpers import EXAMPLE_SESSION

    watcher = Watcher(EXAMPLE_SESSION)
    watcher.go_live()
    app = PerftriageApp(Cockpit(registry=HostRegistry(), session=watcher.session))
    assert snap_compare(app, terminal_size=(160, 45))
