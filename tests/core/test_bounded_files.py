"""Reading transcripts is bounded: regular files only (a FIFO or a symlink to
/dev/zero named ``*.jsonl`` is listed as unreadable, never opened for a read
that cannot end), the header line is read with a limit, and an event line
over the size cap is skipped with a clear problem instead of being held."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from perftriage.core.model import events as ev
from perftriage.core.store import stream, transcript

REPO = Path(__file__).resolve().parents[2]
HEADER = b'{"format":"perftriage-session","version":1,"started_at":"2026-11-28T09:00:00","hosts":["a"]}\n'


def perftriage(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "tui")}
    return subprocess.run([sys.executable, "-m", "perftriage", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)


def good(directory: Path) -> Path:
    path = directory / "2026-11-28-good.jsonl"
    path.write_bytes(HEADER + ev.encode(ev.NoteAdded(text="hello", t=1.0)) + b"\n")
    return path


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_sessions_lists_what_is_not_a_regular_file_as_unreadable(tmp_path, kind):
    good(tmp_path)
    odd = tmp_path / "2026-11-29-odd.jsonl"
    if kind == "fifo":
        os.mkfifo(odd)
    elif kind == "dev-zero":
        odd.symlink_to("/dev/zero")
    else:
        odd.mkdir()
    t0 = time.monotonic()
    r = perftriage("--sessions-dir", str(tmp_path), "sessions")
    assert time.monotonic() - t0 < 20
    assert r.returncode == 0, r.stderr
    row = next(line for line in r.stdout.splitlines() if "odd" in line)
    assert "unreadable: " in row and "not a regular file" in row, row
    assert any("good" in line and "1" in line for line in r.stdout.splitlines())


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_report_and_replay_refuse_what_is_not_a_regular_file(tmp_path, kind):
    odd = tmp_path / "odd.jsonl"
    if kind == "fifo":
        os.mkfifo(odd)
    else:
        odd.symlink_to("/dev/zero")
    for args in (["report", str(odd), "-o", str(tmp_path / "r.md")], ["replay", str(odd)]):
        r = perftriage("--sessions-dir", str(tmp_path), *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "not a file" in r.stderr and "Traceback" not in r.stderr, r.stderr
    # and every reader below the commands refuses it the same way, at once
    from perftriage.core.replay.state_at import state_at
    from perftriage.core.replay.timeline import Timeline

    for read in (transcript.read, transcript.read_header, stream.read_tail, Timeline.open,
                 lambda p: state_at(p, None), lambda p: list(stream.iter_raw(p))):
        with pytest.raises(stream.NotRegularFile, match="not a regular file"):
            read(odd)


def test_a_header_without_a_newline_is_read_with_a_limit(tmp_path):
    path = tmp_path / "long.jsonl"
    path.write_bytes(b'{"format":"perftriage-session","x":"' + b"x" * (8 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(transcript.TranscriptError) as err:
            transcript.read_header(path)
        with pytest.raises(transcript.TranscriptError):
            transcript.read(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "line 1 is longer than" in str(err.value)
    assert peak < 2 << 20, peak


def _with_huge_event(path: Path, size: int) -> Path:
    with open(path, "wb") as fh:
        fh.write(HEADER)
        fh.write(ev.encode(ev.NoteAdded(text="before", t=1.0)) + b"\n")
        fh.write(b'{"type":"log.lines","source_id":"l1","lines":["' + b"y" * size + b'"],"t":2.0}\n')
        fh.write(ev.encode(ev.NoteAdded(text="after", t=3.0)) + b"\n")
    return path


def test_an_event_over_the_cap_is_skipped_with_a_clear_problem(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "MAX_LINE_BYTES", 1 << 20)
    path = _with_huge_event(tmp_path / "big.jsonl", 12 << 20)
    tracemalloc.start()
    try:
        tr = transcript.read(path)
        from perftriage.core.report.from_file import render_file
        problems: list = []
        text = render_file(path, problems)
        from perftriage.core.replay.timeline import Timeline
        timeline = Timeline.open(path)
        timeline.scan()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [e.text for e in tr.events] == ["before", "after"]
    for found in (tr.problems, problems, timeline.problems):
        assert len(found) == 1 and found[0].line == 3, found
        assert "over the 1 MiB limit" in found[0].message, found[0].message
    assert "before" in text and "after" in text
    assert peak < 10 << 20, peak  # the 12 MB line was never held


def test_the_cap_by_default_lets_big_real_events_through(tmp_path):
    path = _with_huge_event(tmp_path / "ok.jsonl", 4 << 20)
    assert len(transcript.read(path).events) == 3
