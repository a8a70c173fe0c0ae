"""`perftriage sessions` says "recording" for the counts of a session a
cockpit records now (it printed `?`, as for a run that
crashed), and `?` still for a crashed one. The lock is the writer's own, as
a named investigation's is; a separate process reads it, as the command
would."""

import json
import subprocess
import sys

from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.model import events as ev
from perftriage.core.store import session_files
from perftriage.services.investigation.session import Session


def _listed(tmp_path) -> dict[str, dict]:
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "sessions", "--json"])
    assert r.exit_code == 0, r.output
    return {d["name"]: d for d in json.loads(r.output)}


def test_a_live_session_reads_recording_and_a_closed_one_its_counts(tmp_path):
    live = Session("live", hosts=["localhost"], sessions_dir=tmp_path)
    live.emit(ev.NoteAdded(text="n1"))
    assert live.path is not None
    live.writer.sync()
    # another process, as `perftriage sessions` is
    out = subprocess.run(
        [sys.executable, "-m", "perftriage", "--sessions-dir", str(tmp_path), "sessions"],
        capture_output=True, text=True, timeout=60, check=True).stdout
    row = next(line for line in out.splitlines() if line.startswith(live.path.name))
    assert "recording" in row and "?" not in row, row
    assert _listed(tmp_path)[live.path.name]["recording"] is True
    live.close()
    closed = _listed(tmp_path)[live.path.name]
    assert closed["recording"] is False and closed["counts"]["note"] == 1


def test_a_crashed_run_still_reads_a_question_mark(tmp_path):
    done = Session("crash-src", hosts=["localhost"], sessions_dir=tmp_path)
    done.emit(ev.NoteAdded(text="n1"))
    done.close()
    crashed = tmp_path / "20200101-000000-crashed.jsonl"
    crashed.write_bytes(b"".join(done.path.read_bytes().splitlines(keepends=True)[:-1]))
    info = session_files.describe(crashed)
    assert info.recording is False and info.counts is None
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "sessions"])
    row = next(line for line in r.output.splitlines() if line.startswith(crashed.name))
    assert "?" in row and "recording" not in row
