"""Issue 31 item 5: investigation names no file can have, and a watched
transcript truncated under the watcher.

A name that is not UTF-8 (the shell's ``$'\\xff'``: the bytes reach Python
as lone surrogates) or 10,000 characters long, given to ``-s``, ``watch``,
``report``, ``replay`` and ``share`` in a real process: exit 2 with one short
line saying why, never a traceback, nothing written. ``watch`` on a
transcript truncated to 0 bytes keeps what it showed and waits for a header
again, as ``tail -F`` does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perftriage.core.model import events as ev
from perftriage.core.store import investigations as inv
from perftriage.core.store import session_files
from perftriage.services.investigation.named import open_investigation
from perftriage.services.investigation.watch import Watcher
from tests.cli.test_watch import Clock, _notes

TUI = str(Path(__file__).resolve().parents[2] / "tui")
NOT_UTF8 = b"run-\xff\xfe"
LONG = b"a" * 10_000
COMMANDS = [["-s"], ["watch"], ["report"], ["replay"], ["share"]]


def _perftriage(tmp_path: Path, *argv: bytes | str) -> subprocess.CompletedProcess:
    cfg = tmp_path / "config.toml"
    cfg.write_text('[[hosts]]\nname = "localhost"\n')
    env = {**os.environ, "PYTHONPATH": TUI, "LC_ALL": "C.UTF-8"}
    return subprocess.run(
        [sys.executable, "-m", "perftriage", "--config", str(cfg), "--sessions-dir",
         str(tmp_path / "sessions"), *argv],
        stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=60)


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("name", [NOT_UTF8, LONG], ids=["not-utf8", "10000-chars"])
def test_a_name_no_file_can_have_is_a_clear_usage_error(tmp_path, command, name):
    r = _perftriage(tmp_path, *command, name)
    err = r.stderr.decode("utf-8", "replace")
    assert r.returncode == 2, err[-2000:]
    assert "Traceback" not in err and len(err) < 400, err[-2000:]
    if name == NOT_UTF8:
        assert "must be UTF-8 text (byte 0xff at character 5 is not)" in err
        assert "'run-\\xff\\xfe'" in err  # the name shown, its bytes visible
    else:
        assert "at most 200 characters (this one has 10,000)" in err
        assert "… (10,000 characters)" in err  # not echoed whole
    sessions = tmp_path / "sessions"
    assert not sessions.exists() or not any(sessions.iterdir())  # nothing written


def test_a_file_whose_name_is_not_utf8_is_still_reported(tmp_path):
    """The same bytes as a real file's name are fine: it is found and its
    report written (the name shown as \\xff in it)."""
    src = Path(__file__).resolve().parents[1] / "fixtures" / "session-h200-standin.jsonl"
    path = Path(os.fsdecode(bytes(tmp_path) + b"/" + NOT_UTF8 + b".jsonl"))
    path.write_bytes(src.read_bytes())
    r = _perftriage(tmp_path, "report", os.fsencode(path))
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    report = path.with_suffix(".md").read_text(encoding="utf-8")
    assert "run-\\xff\\xfe.jsonl" in report


def test_not_found_names_the_reason_in_one_short_line(tmp_path):
    msg = session_files.not_found("x\x1b]52;c;AAAA\x07" + "y" * 100, tmp_path)
    assert "\x1b" not in msg and "\x07" not in msg and len(msg) < 300
    assert "cannot hold control characters" in msg
    assert session_files.not_found("nope", tmp_path, what="investigation").startswith(
        "no investigation 'nope' in ")


def _watched(tmp_path: Path, name: str, note: str) -> tuple[Path, Clock, Watcher]:
    s = open_investigation(name, tmp_path, [])
    s.emit(ev.NoteAdded(text=note))
    s.close()
    path = inv.path_for(name, tmp_path)
    clock = Clock()
    w = Watcher(path, clock=clock)
    w.go_live()
    assert _notes(w) == [note]
    return path, clock, w


def test_watch_survives_a_transcript_truncated_to_zero_and_waits_for_a_header(tmp_path):
    path, clock, w = _watched(tmp_path, "cut", "before the cut")

    os.truncate(path, 0)  # was: TranscriptError traceback out of _reopen
    for _ in range(3):
        clock.tick(w)
    assert _notes(w) == ["before the cut"]  # what was shown stays
    assert w.waiting == "the transcript was truncated: waiting for its header"

    # a writer starts again: half a header is still waiting
    header = path.with_name("other.jsonl")
    s2 = open_investigation("other", tmp_path, [])
    s2.emit(ev.NoteAdded(text="after the cut"))
    s2.close()
    data = header.read_bytes()
    first = data.index(b"\n") + 1
    path.write_bytes(data[:first // 2])
    clock.tick(w)
    assert w.waiting is not None and w.reopened == 0
    path.write_bytes(data)  # whole: read from its start, like tail -F
    clock.tick(w)
    assert _notes(w) == ["after the cut"] and w.reopened == 1 and w.waiting is None


def test_watch_says_so_when_the_file_is_replaced_by_no_transcript(tmp_path):
    path, clock, w = _watched(tmp_path, "gone", "kept")
    path.unlink()
    clock.tick(w)
    assert w.waiting == "the transcript is gone: waiting for it to come back"
    path.write_bytes(b"not json at all\n")
    clock.tick(w)
    assert w.waiting is not None and w.waiting.startswith(
        "the transcript was replaced by what is no transcript")
    assert _notes(w) == ["kept"]
