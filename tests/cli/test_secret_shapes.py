"""Secrets in the shapes engines and tools really print them (a corpus in
``tests/fixtures/secrets/``): each planted one is masked, in plain text and
inside an encoded transcript line; lines that only look close (token counts,
tokenizer paths, ``api_key=None``) and the engines' recorded logs come out
unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.core.model import events as ev
from perftriage.core.store.redact import DEFAULT, MASK

HERE = Path(__file__).parents[1]  # tests/
CORPUS = HERE / "fixtures" / "secrets"
LOGS = Path("/work/shared/fixtures/logs") if Path("/work/shared/fixtures/logs").exists() \
    else HERE / "fixtures" / "logs"


def planted() -> list[tuple[str, str]]:
    rows = []
    for raw in (CORPUS / "planted.tsv").read_text().splitlines():
        secret, line = raw.split("\t", 1)
        rows.append((secret, line.replace("\\n", "\n")))
    return rows


@pytest.mark.parametrize("secret,line", planted(), ids=[s[:16] for s, _ in planted()])
def test_each_planted_secret_is_masked(secret, line):
    out = DEFAULT.text(line)
    assert secret not in out, out
    assert MASK in out
    encoded = DEFAULT.json_line(ev.encode(ev.NoteAdded(text=line, t=1.0)))
    note = ev.decode(encoded)
    assert secret not in note.text and MASK in note.text
    batch = DEFAULT.json_line(ev.encode(ev.LogLines(source_id="l", lines=line.split("\n"))))
    assert secret.encode() not in batch


def test_the_corpus_is_big_enough_to_mean_something():
    assert len(planted()) >= 35


@pytest.mark.parametrize("line", (CORPUS / "clean.txt").read_text().splitlines())
def test_lines_that_only_look_close_are_unchanged(line):
    assert DEFAULT.text(line) == line


@pytest.mark.parametrize("name", ["sglang-0.5.23-tp8.log", "vllm-0.33.0.log"])
def test_recorded_engine_logs_pass_unchanged(name):
    path = LOGS / name
    if not path.exists():
        pytest.skip(f"{path} not here")
    lines = path.read_text().splitlines()
    changed = [line for line in lines if DEFAULT.text(line) != line]
    assert changed == []


def test_a_key_block_split_over_log_lines_is_masked():
    lines = ["[x] loading key", "-----BEGIN OPENSSH PRIVATE KEY-----",
             "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
             "QyNTUxOQAAACBbVG2yKq3xExampleExampleExampleExampleExampleAAAAJhBexample",
             "-----END OPENSSH PRIVATE KEY-----", "[x] done"]
    data = DEFAULT.json_line(ev.encode(ev.LogLines(source_id="l", lines=lines)))
    out = ev.decode(data).lines
    assert out[0] == lines[0] and out[-1] == lines[-1]
    assert b"b3BlbnNzaC1rZXkt" not in data and b"QyNTUxOQAAACBb" not in data
    assert "-----END OPENSSH PRIVATE KEY-----" in out[4]


def test_a_lowercase_password_in_a_note_is_not_in_the_report(tmp_path):
    from perftriage.cli import cli

    path = tmp_path / "s.jsonl"
    path.write_text(
        '{"format":"perftriage-session","version":1,"started_at":"x","hosts":["a"]}\n'
        + ev.encode(ev.NoteAdded(text="staging takes password=hunter2note", t=1.0)).decode()
        + "\n")
    out = tmp_path / "s.md"
    r = CliRunner().invoke(cli, ["report", str(path), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "hunter2note" not in out.read_text() and MASK in out.read_text()
