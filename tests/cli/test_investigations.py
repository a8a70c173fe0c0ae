"""Named investigations: one transcript grown by every run, continued through
the reducer, safe file names for any name, one recorder at a time, a run
killed with kill -9 continued, and `sessions`/`replay`/`report` by name."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.model import events as ev
from perftriage.core.replay.timeline import Timeline
from perftriage.core.store import investigations as inv
from perftriage.core.store import stream, transcript
from perftriage.services.investigation.named import open_investigation

TUI = str(Path(__file__).resolve().parents[2] / "tui")


def _first_run(tmp_path, name="moe gap"):
    s = open_investigation(name, tmp_path, ["localhost"])
    s.emit(ev.ProbeQueued(probe_id=s.new_id("p"), host="localhost", kind="shell", args=["true"]))
    s.emit(ev.ProbeFinished(probe_id="p1", status="ok", exit_status=0))
    s.emit(ev.HypothesisAdded(hyp_id=s.new_id("h"), title="wasted traffic"))
    s.emit(ev.EvidenceLinked(hyp_id="h1", ref_kind="probe", ref_id="p1", stance="for"))
    s.emit(ev.NoteAdded(text="first run"))
    s.close()
    return s.path


def test_a_second_run_continues_the_investigation(tmp_path):
    path = _first_run(tmp_path)
    s = open_investigation("moe gap", tmp_path, ["localhost"])
    state = s.state
    assert [h.title for h in state.hypotheses] == ["wasted traffic"]
    assert [(e.ref_id, e.stance) for e in state.hypotheses[0].evidence] == [("p1", "for")]
    assert state.probes["p1"].status == "ok" and [n.text for n in state.notes] == ["first run"]
    assert not state.ended and [seg.segment for seg in state.segments] == [1, 2]
    assert s.new_id("p") == "p2" and s.new_id("h") == "h2"  # ids go on, never reused
    before = state.last_t
    note = s.emit(ev.NoteAdded(text="second run"))
    assert note.t > before  # session time goes on from the last run
    s.close()
    tr = transcript.read(path)
    assert tr.problems == []
    assert [type(e).__name__ for e in tr.events].count("SegmentStarted") == 2
    second = [e for e in tr.events if isinstance(e, ev.SegmentStarted)][1]
    assert second.segment == 2 and second.gap_s is not None and second.gap_s >= 0
    tail = stream.read_tail(path)
    assert tail.summary is not None and tail.summary["segments"] == 2
    assert tail.summary["events"] == len(tr.events)  # the whole investigation, not the last run


def test_a_run_left_probes_running_they_are_cancelled_by_the_next(tmp_path):
    s = open_investigation("x", tmp_path, [])
    s.emit(ev.ProbeQueued(probe_id="p1", host="localhost", kind="shell", args=["sleep 9"]))
    s.emit(ev.ProbeStarted(probe_id="p1"))
    s.writer.close()  # the process died: no session.ended
    s2 = open_investigation("x", tmp_path, [])
    assert s2.state.probes["p1"].status == "cancelled"
    s2.close()


KILLED_RUN = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    from perftriage.core.model import events as ev
    from perftriage.services.investigation.named import open_investigation
    s = open_investigation(sys.argv[2], Path(sys.argv[1]), ["localhost"])
    h = s.new_id("h")
    s.emit(ev.HypothesisAdded(hyp_id=h, title="launch bound"))
    s.emit(ev.EvidenceLinked(hyp_id=h, ref_kind="note", ref_id="n", stance="against"))
    s.writer.sync()
    print("recorded", flush=True)
    while True:
        s.emit(ev.NoteAdded(text="x" * 200))
""")


def test_kill_9_mid_segment_then_continue(tmp_path):
    _first_run(tmp_path, "killed")
    env = {**os.environ, "PYTHONPATH": TUI}
    proc = subprocess.Popen([sys.executable, "-c", KILLED_RUN, str(tmp_path), "killed"],
                            stdout=subprocess.PIPE, env=env, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "recorded"
        # the recorder holds the lock: a second cockpit is refused
        with pytest.raises(inv.Busy, match="perftriage watch killed"):
            open_investigation("killed", tmp_path, [])
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    path = inv.path_for("killed", tmp_path)
    with open(path, "ab") as fh:
        fh.write(b'{"type":"note","text":"cut he')  # a torn last line, as a kill can leave
    s = open_investigation("killed", tmp_path, ["localhost"])
    titles = [h.title for h in s.state.hypotheses]
    assert titles == ["wasted traffic", "launch bound"]
    assert s.state.hypothesis("h2").evidence[0].stance == "against"
    assert [seg.segment for seg in s.state.segments] == [1, 2, 3]
    s.emit(ev.NoteAdded(text="after the crash"))
    s.close()
    tr = transcript.read(path)
    assert tr.problems == []  # the torn line was cut, nothing else lost
    assert tr.events[-2].text == "after the crash"


@pytest.mark.parametrize("name", ["my investigation", "café ☕ 推理", "../../etc/passwd", "..",
                                  ".hidden", "a/b", "a%2Fb", "x" * 200, "-rf", "~"])
def test_any_name_is_one_plain_file_in_the_sessions_dir(tmp_path, name):
    path = inv.path_for(name, tmp_path)
    assert path.parent == tmp_path and "/" not in path.name
    assert not path.name.startswith(".") and len(path.name.encode()) <= 200
    s = open_investigation(name, tmp_path, [])
    s.close()
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    assert transcript.read_header(path)["name"] == name
    s2 = open_investigation(name, tmp_path, [])  # and continues by the same name
    assert len(s2.state.segments) == 2
    s2.close()


def test_names_never_share_a_file_and_bad_names_are_refused(tmp_path):
    names = ["a/b", "a%2Fb", "a b", "a+b", "a-b", "A-b", "x" * 199 + "1", "x" * 199 + "2"]
    assert len({inv.path_for(n, tmp_path) for n in names}) == len(names)
    for bad in ["", "   ", "a\nb", "a\x1b[31mb", "x" * 201]:
        with pytest.raises(inv.BadName):
            inv.path_for(bad, tmp_path)
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "-s", "a\x07b"])
    assert r.exit_code == 2 and "--session 'a␇b': an investigation name cannot hold control" in r.output


def test_a_file_of_another_name_is_not_continued(tmp_path):
    path = inv.path_for("mine", tmp_path)
    tmp_path.mkdir(exist_ok=True)
    path.write_text(json.dumps(transcript.make_header("2026", [], name="other")) + "\n")
    with pytest.raises(transcript.TranscriptError, match="not the transcript of investigation"):
        open_investigation("mine", tmp_path, [])


def test_sessions_lists_investigations_by_name_with_segments_and_counts(tmp_path):
    _first_run(tmp_path, "moe gap")
    open_investigation("moe gap", tmp_path, []).close()
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "sessions", "--json"])
    assert r.exit_code == 0, r.output
    (doc,) = json.loads(r.output)
    assert doc["name"] == "moe gap" and doc["investigation"] == "moe gap"
    assert doc["segments"] == 2 and doc["last_activity"]
    assert doc["counts"]["hypothesis.added"] == 1 and doc["counts"]["note"] == 1
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "sessions"])
    header, row = r.output.splitlines()
    assert row.startswith("moe gap ") and header.startswith("name ")
    cells = row.split("  ")
    assert [c.strip() for c in cells if c.strip()][1] == "2"  # segments


def test_a_crashed_investigation_is_listed_with_its_segments(tmp_path):
    _first_run(tmp_path, "crashed")
    s = open_investigation("crashed", tmp_path, [])
    s.writer.close()
    path = inv.path_for("crashed", tmp_path)
    data = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(data[:-1]))  # no summary at the end: counted from the file
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "sessions", "--json"])
    (doc,) = json.loads(r.output)
    assert doc["segments"] == 2 and doc["events"] is None


def test_report_and_replay_take_the_investigation_name(tmp_path):
    _first_run(tmp_path, "moe gap ../x")
    open_investigation("moe gap ../x", tmp_path, []).close()
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "report", "moe gap ../x",
                                 "-o", "-"])
    assert r.exit_code == 0, r.output
    assert r.output.startswith("# perftriage report: moe gap ../x\n")
    assert "## Runs" in r.output and "run 2, after" in r.output
    assert "wasted traffic" in r.output
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "replay", "moe gap ../x",
                                 "--json"])
    assert r.exit_code == 0, r.output
    assert "wasted traffic" in r.output


def test_the_player_steps_over_the_pause_between_runs(tmp_path):
    path = _first_run(tmp_path)
    s = open_investigation("moe gap", tmp_path, [])
    s.close()
    with open(path, "r+b") as fh:  # make the pause two days long, as a real one may be
        lines = fh.read().splitlines(keepends=True)
    for i, line in enumerate(lines):
        if b'"segment":2' in line:
            doc = json.loads(line)
            doc["gap_s"] = 2 * 86400 + 3600
            lines[i] = json.dumps(doc).encode() + b"\n"
    path.write_bytes(b"".join(lines))
    tl = Timeline.open(path)
    tl.scan()
    (mark,) = [m for m in tl.markers if m.kind == "segment"]
    assert mark.label == "run 2, after 2d 1h"
    assert tl.duration_s < 5  # the pause is a mark on the timeline, not time to wait through


def test_the_fast_restore_is_the_whole_fold(tmp_path):
    """restore() skips decoding old host samples and (deferred) log batches:
    with restore_logs() the state is the one the reducer gives for every event."""
    from perftriage.core.model import reducer
    from perftriage.core.model.state import SessionState
    from tests.bench.long_session import generate

    raw = generate(tmp_path / "raw.jsonl", 12_000)  # a realistic mix: 2 hosts, logs, probes
    header, rest = raw.read_bytes().split(b"\n", 1)
    doc = json.loads(header)
    doc.update(name="long", investigation=True)
    path = inv.path_for("long", tmp_path)
    path.write_bytes(json.dumps(doc).encode() + b"\n" + rest)
    full = SessionState(name="long", started_at=doc["started_at"])
    for host in doc["hosts"]:
        full.host(host)
    for _, event in stream.iter_events(path, stream.header_and_offset(path)[1]):
        reducer.apply(full, event)
    fast = inv.restore(path, logs=False)
    assert fast.state.logs and all(not s.lines for s in fast.state.logs.values())
    inv.adopt_logs(fast.state, inv.restore_logs(path, fast.log_offsets))
    got = fast.state
    assert got.event_count == full.event_count and got.last_t == full.last_t
    for name, hs in full.hosts.items():
        mine = got.hosts[name]
        assert (mine.sample, mine.conn_state) == (hs.sample, hs.conn_state)
        assert list(mine.cpu_history) == list(hs.cpu_history)
        assert {i: list(d) for i, d in mine.util_history.items()} == \
            {i: list(d) for i, d in hs.util_history.items()}
    for sid, src in full.logs.items():
        mine_log = got.logs[sid]
        assert list(mine_log.lines) == list(src.lines) and mine_log.metrics.count == src.metrics.count
        assert (mine_log.metrics_t, list(mine_log.errors)) == (src.metrics_t, list(src.errors))
    assert list(got.log_batches) == list(full.log_batches)
    assert [(h.hyp_id, h.status) for h in got.hypotheses] == \
        [(h.hyp_id, h.status) for h in full.hypotheses]
    assert {k: p.status for k, p in got.probes.items()} == {k: p.status for k, p in full.probes.items()}


def test_a_corrupt_line_is_skipped_and_said_once(tmp_path):
    path = _first_run(tmp_path, "corrupt")
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(3, b'{"type":"note","text":\n')  # a line damaged in the middle
    path.write_bytes(b"".join(lines))
    s = open_investigation("corrupt", tmp_path, [])
    assert [h.title for h in s.state.hypotheses] == ["wasted traffic"]
    said = [n.text for n in s.state.notes if "unreadable" in n.text]
    assert len(said) == 1 and "line 4: corrupt line" in said[0]
    s.close()
