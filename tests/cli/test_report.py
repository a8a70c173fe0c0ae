"""Markdown report: golden file on a fixed transcript, torn tail, CLI."""

import os
from pathlib import Path

from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.report import markdown as report
from perftriage.core.store import transcript
from perftriage.core.model.state import SessionState
from perftriage.core.view import log_kinds
from tests.support.helpers import FIXTURES, GOLDEN, REPO

FIXTURE = FIXTURES / "report" / "investigation.jsonl"
GOLDEN_REPORT = GOLDEN / "report-investigation.md"


def test_report_matches_golden_file():
    """Regenerate after an intended change with PERFTRIAGE_UPDATE_GOLDEN=1."""
    text = report.render_transcript(transcript.read(FIXTURE))
    if os.environ.get("PERFTRIAGE_UPDATE_GOLDEN") == "1":
        GOLDEN_REPORT.write_text(text, encoding="utf-8")
    assert text == GOLDEN_REPORT.read_text(encoding="utf-8")


def test_report_has_every_section_for_a_reader_who_was_not_there():
    text = report.render_transcript(transcript.read(FIXTURE))
    for heading in ("# perftriage report", "## Hosts", "## Gap to the memory-bandwidth floor",
                    "## Hypotheses", "### ✔ supported", "### ✘ refuted", "## Probe timeline",
                    "## Notes", "### Notable events", "### Throughput"):
        assert heading in text
    assert "2 × NVIDIA H200" in text
    assert "gap 30.3x" in text and "3.3%" in text
    assert "▼ against (probe p4" in text
    assert "ModuleNotFoundError: No module named 'flashinfer.cute'" in text
    assert "restarting server with --moe-runner-backend flashinfer_cutedsl" in text
    assert "oom in gpu-a" in text and "ready in gpu-a" in text
    assert "97.1 ms/token" in text


def test_report_of_the_bundled_example_session():
    text = report.render_transcript(transcript.read(REPO / "sessions" / "example-moe-gap.jsonl"))
    assert "# perftriage report: example-moe-gap" in text and "gap 30.2x" in text
    assert "8 × NVIDIA RTX PRO 6000 Blackwell Server Edition" in text
    assert "Hypotheses: 11, probes: 7" in text
    assert "batch 1: median 10.29 tok/s = 97.2 ms/token" in text
    assert "server sglang on gpu-a ready after 3 min 36 s" in text


def _torn_copy(tmp_path: Path) -> Path:
    data = FIXTURE.read_bytes()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(data + b'{"type":"note","text":"half a li')
    return torn


def test_torn_tail_warns_on_stderr_and_still_writes(tmp_path):
    torn = _torn_copy(tmp_path)
    out = tmp_path / "r.md"
    r = CliRunner().invoke(cli, ["report", str(torn), "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "warning" in r.stderr and "torn last line" in r.stderr
    text = out.read_text()
    assert "Warning: the transcript has a problem" in text
    assert "## Probe timeline" in text and "half a li" not in text


def test_report_default_output_is_next_to_the_transcript(tmp_path):
    src = tmp_path / "s.jsonl"
    src.write_bytes(FIXTURE.read_bytes())
    r = CliRunner().invoke(cli, ["report", str(src)])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "s.md").exists() and str(tmp_path / "s.md") in r.stdout


def test_report_stdout_and_not_a_transcript(tmp_path):
    r = CliRunner().invoke(cli, ["report", str(FIXTURE), "-o", "-"])
    assert r.exit_code == 0 and r.stdout.startswith("# perftriage report: report-fixture")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("hello\n")
    r = CliRunner().invoke(cli, ["report", str(bad)])
    assert r.exit_code == 2 and "not a perftriage" in r.stderr


def test_empty_state_renders_without_sections_crashing():
    text = report.render(SessionState(name="empty"))
    assert "No hypotheses were recorded." in text and "No probes were run." in text


def test_log_helpers():
    line = ("[2026-11-28 09:16:06 TP0] Decode batch, #running-req: 1, #token: 852, "
            "token usage: 0.00, cuda graph: True, gen throughput (token/s): 10.31, #queue-req: 0")
    assert log_kinds.decode_throughput(line) == (1, 10.31)
    assert log_kinds.decode_throughput(
        "INFO 11-28 09:16:06 [loggers.py:123] Avg prompt throughput: 0.0 tokens/s, "
        "Avg generation throughput: 10.3 tokens/s, Running: 1 reqs, Waiting: 0 reqs") == (1, 10.3)
    assert log_kinds.batch1_ms_per_token([line]) == 1000 / 10.31
    assert log_kinds.classify_log_line("NCCL WARN socket timeout") == "nccl"
    assert log_kinds.classify_log_line("Traceback (most recent call last):") == "traceback"
    assert log_kinds.classify_log_line("all fine") is None


def test_streamed_report_equals_the_in_memory_report(tmp_path):
    """`perftriage report` streams the file (host samples skipped, log lines
    scanned as they pass); the text is the same as reducing every event."""
    from perftriage.core.report.from_file import render_file
    from tests.bench.long_session import generate

    long = generate(tmp_path / "long.jsonl", 3000)  # errors, probes, notes, refuted hypotheses
    for path in (FIXTURE, long, REPO / "sessions" / "example-moe-gap.jsonl"):
        assert render_file(path) == report.render_transcript(transcript.read(path)), path
