import json
import os
import signal
import subprocess
import sys
import time

import pytest

from perftriage.core.model import events as ev
from perftriage.core.store import transcript


def _events(n):
    out = []
    for i in range(n):
        out.append(ev.ProbeQueued(probe_id=f"p{i}", host="h", kind="shell", args=[f"echo {i}"],
                                  t=float(i), wall=1000.0 + i))
        out.append(ev.NoteAdded(text=f"note {i} ünïcode \n newline", t=float(i), wall=1000.0 + i))
    return out


def _write(path, events):
    w = transcript.TranscriptWriter(path, transcript.make_header("2026-01-01T00:00:00", ["h"]))
    for e in events:
        w.write(e)
    w.close()


def test_header_is_first_line(tmp_path):
    path = tmp_path / "s.jsonl"
    _write(path, [])
    header = json.loads(path.read_text().splitlines()[0])
    assert header["format"] == "perftriage-session"
    assert header["version"] == 1
    assert header["hosts"] == ["h"]
    assert header["started_at"] == "2026-01-01T00:00:00"
    assert "perftriage" in header


def test_round_trip(tmp_path):
    path = tmp_path / "s.jsonl"
    events = _events(50)
    _write(path, events)
    tr = transcript.read(path)
    assert tr.events == events
    assert tr.problems == []


def test_writer_refuses_to_overwrite(tmp_path):
    path = tmp_path / "s.jsonl"
    _write(path, [])
    with pytest.raises(FileExistsError):
        _write(path, [])


def test_torn_tail_keeps_everything_before(tmp_path):
    path = tmp_path / "s.jsonl"
    events = _events(5)
    _write(path, events)
    data = path.read_bytes()
    data = data[: data.rindex(b'{"type":"session.summary"')]  # a crash writes no summary
    path.write_bytes(data[: len(data) - 7])  # cut the last event mid-line
    tr = transcript.read(path)
    assert tr.events == events[:-1]
    assert tr.torn_tail
    assert len(tr.problems) == 1 and tr.problems[0].line == len(events) + 1
    assert "torn last line" in str(tr.problems[0])


def test_corrupt_middle_line_reported_with_line_number(tmp_path):
    path = tmp_path / "s.jsonl"
    events = _events(3)
    _write(path, events)
    lines = path.read_text().splitlines(keepends=True)
    lines[3] = '{"type": "probe.queued", "garbage\n'
    path.write_text("".join(lines))
    tr = transcript.read(path)
    assert len(tr.events) == len(events) - 1
    assert [p.line for p in tr.problems] == [4]
    assert not tr.torn_tail
    assert "line 4: corrupt line" in str(tr.problems[0])


def test_not_a_transcript(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"hello": 1}\n')
    with pytest.raises(transcript.TranscriptError, match="line 1"):
        transcript.read(path)
    path.write_text("")
    with pytest.raises(transcript.TranscriptError, match="empty"):
        transcript.read(path)


WRITER_SCRIPT = """
import sys, time
from perftriage.core.model import events as ev
from perftriage.core.store import transcript
w = transcript.TranscriptWriter(sys.argv[1], transcript.make_header("x", []))
i = 0
while True:
    w.write(ev.NoteAdded(text=str(i), t=time.monotonic()))
    i += 1
    if i == 200:
        print("ready", flush=True)
    time.sleep(0.001)
"""


def test_kill_9_loses_at_most_the_tail(tmp_path):
    path = tmp_path / "s.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", WRITER_SCRIPT, str(path)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    tr = transcript.read(path)
    # every flushed line is readable and in order; at most the last is torn
    texts = [int(e.text) for e in tr.events]
    assert texts == list(range(len(texts))) and len(texts) >= 200
    assert all(p.torn_tail for p in tr.problems)


def test_background_thread_fsyncs_new_events_without_further_writes(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(transcript.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    w = transcript.TranscriptWriter(tmp_path / "s.jsonl", transcript.make_header("x", []))
    before = len(synced)
    w.write(ev.NoteAdded(text="one"))  # and then nothing: the thread must still sync it
    deadline = time.monotonic() + 5
    while len(synced) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(synced) > before
    w.close()
    assert w.closed


def test_sync_makes_every_written_event_readable_before_close(tmp_path):
    path = tmp_path / "s.jsonl"
    w = transcript.TranscriptWriter(path, transcript.make_header("x", []))
    events = _events(300)
    for e in events:
        w.write(e)
    w.sync()  # what the report key does on a live session
    assert transcript.read(path).events == events
    w.close()


def test_events_reach_the_file_within_the_gather_window_in_few_writes(tmp_path, monkeypatch):
    """Without a sync or close, an event is readable from the file soon after
    it is written (GATHER_S), and a burst of events is written in a few
    writes, not one per event (one wake-up of the writer thread each)."""
    path = tmp_path / "s.jsonl"
    w = transcript.TranscriptWriter(path, transcript.make_header("x", []))
    drains = 0
    real_drain = w._drain

    def counted() -> None:
        nonlocal drains
        drains += 1
        real_drain()

    monkeypatch.setattr(w, "_drain", counted)
    events = _events(200)
    began = time.monotonic()
    for e in events:  # a steady stream (~0.2 s), as a log flood's batches come
        w.write(e)
        time.sleep(0.001)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        read = transcript.read(path).events
        if len(read) == len(events):
            break
        time.sleep(0.01)
    elapsed = time.monotonic() - began
    assert read == events
    # at most one write per gather window (whatever the box's speed), where
    # waking per event wrote ~one per event
    assert drains <= elapsed / transcript.GATHER_S + 3 and drains < len(events) / 4
    w.close()


def test_a_log_batchs_parse_rides_on_its_event_but_never_into_the_transcript():
    """``LogLines.parsed`` is typed and declared, and no field: not encoded,
    not decoded, not compared."""
    import msgspec

    from perftriage.core.model import events as ev
    from perftriage.core.parse import batch_scan

    lines = ["Decode batch. #running-req: 1, #token: 10, gen throughput (token/s): 12.5"]
    found = batch_scan.scan(lines)
    event = ev.LogLines(source_id="l1", lines=lines).with_scan(found)
    assert event.parsed is found and event.scan() is found
    assert "parsed" not in msgspec.structs.asdict(event)
    encoded = msgspec.json.encode(event)
    assert b"parsed" not in encoded and b"Decode batch" in encoded
    back = msgspec.json.decode(encoded, type=ev.LogLines)
    assert back == event and back.parsed is None
    assert back.scan() is back.parsed is not None  # parsed when first asked, once
