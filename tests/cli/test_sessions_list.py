"""`perftriage sessions` lists from headers and summary lines, whole names
in pipes, --json; files without a summary are listed from their last lines."""

import json

from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.model import events as ev
from perftriage.core.store import session_files, stream, transcript
from perftriage.services.investigation.session import Session

LONG = "a-very-long-session-name-that-a-rich-table-would-cut-in-an-eighty-column-pipe"


def _session(tmp_path, name=LONG, notes=3):
    s = Session(name, hosts=["localhost", "gpu-a"], sessions_dir=tmp_path)
    for i in range(notes):
        s.emit(ev.NoteAdded(text=f"n{i}"))
    s.close()
    return s.path


def test_writer_appends_a_summary_the_readers_skip(tmp_path):
    path = _session(tmp_path)
    last = path.read_bytes().splitlines()[-1]
    assert stream.is_summary(last)
    summary = json.loads(last)
    assert summary["events"] == 4 and summary["counts"] == {"note": 3, "session.ended": 1}
    assert summary["ended"] is True
    tr = transcript.read(path)
    assert len(tr.events) == 4 and tr.problems == []


def test_pipe_output_has_whole_names_and_counts(tmp_path):
    path = _session(tmp_path)
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "sessions"])
    assert r.exit_code == 0, r.output
    header, row = r.output.splitlines()
    assert header.split("  ")[0] == "name" and "segments" in header and "last activity" in header
    assert row.split()[0] == path.name and row.split()[5] == "4"
    assert row.endswith("localhost, gpu-a")


def test_json_and_a_file_without_summary(tmp_path):
    whole = _session(tmp_path, "whole")
    crashed = tmp_path / "20200101-000000-crashed.jsonl"
    data = _session(tmp_path, "crash-src", notes=5).read_bytes()
    lines = data.splitlines(keepends=True)
    crashed.write_bytes(b"".join(lines[:-1]) + b'{"type":"note","te')  # no summary, torn
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "sessions", "--json"])
    assert r.exit_code == 0, r.output
    doc = {d["name"]: d for d in json.loads(r.output)}
    assert doc[whole.name]["events"] == 4 and doc[whole.name]["ended"] is True
    c = doc[crashed.name]
    assert c["events"] is None and c["torn_tail"] is True
    assert c["duration_s"] == json.loads(lines[-2])["t"]  # from the last readable event
    assert c["hosts"] == ["localhost", "gpu-a"]


def test_resolve_session_by_file_name_stem_and_bundled_example(tmp_path):
    path = _session(tmp_path, "x")
    assert session_files.resolve_session(path.name, tmp_path) == path
    assert session_files.resolve_session(path.stem, tmp_path) == path
    assert session_files.resolve_session(str(path), tmp_path / "elsewhere") == path
    bundled = session_files.resolve_session("example-moe-gap", tmp_path)
    assert bundled is not None and bundled.name == "example-moe-gap.jsonl"
    assert session_files.resolve_session("../x", tmp_path) is None
    assert session_files.resolve_session("missing", tmp_path) is None
