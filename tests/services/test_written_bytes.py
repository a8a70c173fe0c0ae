"""What perftriage writes holds no raw control or bidi character (``tail -f``
on a transcript must not hand a C1 CSI or a right-to-left override to the
terminal: they are escaped as ``\\uXXXX``, which decode to the same text),
and the directories it creates are private whatever the umask."""

from __future__ import annotations

import json
import os
import stat

import pytest

from perftriage.core.model import events as ev
from perftriage.core.sanitize import json_escape_controls
from perftriage.core.store import transcript
from perftriage.services.investigation.session import Session

NASTY = "csi\u009b31m rlo\u202etxt del\x7f nel\u0085 ls\u2028 lri\u2066 alm\u061c lrm\u200e esc\x1b[2J"
RAW = [b"\xc2\x9b", b"\xe2\x80\xae", b"\x7f", b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x81\xa6",
       b"\xd8\x9c", b"\xe2\x80\x8e", b"\x1b"]


def test_escaping_keeps_the_text_and_drops_the_raw_bytes():
    data = ev.encode(ev.NoteAdded(text=NASTY + " é ü 日本", t=1.0))
    safe = json_escape_controls(data)
    assert all(raw not in safe for raw in RAW), safe
    assert ev.decode(safe).text == NASTY + " é ü 日本"
    assert "é ü 日本".encode() in safe  # other non-ASCII text stays readable
    plain = ev.encode(ev.NoteAdded(text="plain ascii", t=1.0))
    assert json_escape_controls(plain) is plain


def test_a_transcript_holds_no_raw_control_or_bidi_character(tmp_path):
    s = Session("x", sessions_dir=tmp_path, hosts=["h\u202e"])
    s.emit(ev.NoteAdded(text=NASTY))
    s.emit(ev.LogLines(source_id="l", lines=[NASTY, "ok"]))
    s.close()
    data = s.path.read_bytes()
    assert all(raw not in data for raw in RAW), data
    tr = transcript.read(s.path)
    assert any(getattr(e, "text", None) == NASTY for e in tr.events)


@pytest.fixture
def umask_000():
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def test_directories_created_under_umask_000_are_private(tmp_path, umask_000):
    sessions = tmp_path / "a" / "b" / "sessions"
    s = Session("x", sessions_dir=sessions)
    s.close()
    for d in (tmp_path / "a", tmp_path / "a" / "b", sessions):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    assert stat.S_IMODE(s.path.stat().st_mode) == 0o600


async def test_the_report_directory_created_under_umask_000_is_private(tmp_path, umask_000):
    from perftriage.core.store.redact import Redactor
    from perftriage.services.investigation import report_file

    out = tmp_path / "reports" / "deep" / "r.md"
    report_file._write(out, "# r\n")
    for d in (tmp_path / "reports", tmp_path / "reports" / "deep"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert Redactor  # the writer's module imports


def test_json_escape_is_valid_json():
    line = json_escape_controls(json.dumps({"a": "x\u009by"}, ensure_ascii=False).encode())
    assert json.loads(line) == {"a": "x\u009by"}
