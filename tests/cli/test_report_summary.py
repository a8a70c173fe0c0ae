"""`perftriage report NAME --summary`, and the first block of every report:
at most 20 lines to paste — the investigation's story in one line (the
causes and what became of them, then the decode rate from the first steady
phase to the last with its factor and p), what is left, the hosts (once
when they agree), the span and where the full report is — Markdown that
reads right as plain text (no backslash escapes). On real recordings: the
H200 stand-in (decode 13.6 → 108 tok/s) and the report fixture."""

from __future__ import annotations

import re

from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.compare.load import load
from perftriage.core.model import events as ev
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.report.summary import MAX_LINES, prose, story
from perftriage.core.triage.phases import triage
from tests.core.test_triage_real import EAGER
from tests.support.helpers import FIXTURES

STANDIN = FIXTURES / "session-h200-standin.jsonl"
INVESTIGATION = FIXTURES / "report" / "investigation.jsonl"


def _summary(path, tmp_path) -> str:
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "report", str(path),
                                 "--summary"])
    assert r.exit_code == 0, r.output
    return r.output


def test_the_summary_of_a_real_recording_tells_its_story_in_twenty_lines(tmp_path):
    text = _summary(STANDIN, tmp_path)
    lines = text.splitlines()
    assert len(lines) <= MAX_LINES
    story_line = next(line for line in lines if line.startswith("- Story on `h200`"))
    assert re.search(r"decode 13\.\d → 108 tok/s ▲, 8\.0× faster, p < 0\.001", story_line)
    assert any(line.startswith("- Left: ") for line in lines)
    # localhost and h200 see the same GPU: one entry for both
    assert "- Hosts and GPUs: `localhost`, `h200`: `1 × NVIDIA H200`" in lines
    assert any(line.startswith("- Span: 1 min 10 s, 2 phase(s)") for line in lines)
    assert f"writes `{STANDIN.with_suffix('.md')}`" in text
    assert "\\<" not in text and "\\`" not in text and "\\[" not in text
    # the full report too: "p < 0.001" reads as it is when pasted as plain text
    full = CliRunner().invoke(cli, ["report", str(STANDIN), "-o", "-"]).output
    assert "p < 0.001" in full and "\\< " not in full


def test_every_report_starts_with_the_summary(tmp_path):
    out = tmp_path / "r.md"
    r = CliRunner().invoke(cli, ["--sessions-dir", str(tmp_path), "report", str(INVESTIGATION),
                                 "-o", str(out)])
    assert r.exit_code == 0, r.output
    report = out.read_text()
    head = report.split("\n- Started:", 1)[0].splitlines()
    assert head[0] == "# perftriage report: report-fixture"
    assert len(head) <= MAX_LINES + 2
    assert any(line.startswith("- Story on `gpu-a`: ") for line in head)
    assert "- Full report: below" in head


def test_a_fixed_cause_leads_the_story_with_what_became_of_it():
    """The stand-in with its real eager H200 capture before a restart at 36 s:
    the story says launch-bound and, after the change, its state; the rate's
    outcome comes after it, not the first minutes' finding alone."""
    rec = load(STANDIN)
    rec.feed(ev.ProfileCaptured(capture_id="prof1", host="h200", summary=summarize_files(EAGER),
                                t=20.0))
    rec.feed(ev.ServerEvent(server="sglang", host="h200", state="starting", t=36.0))
    told = story(rec, triage(rec), "h200")
    assert told.startswith("launch-bound (")
    assert re.search(r"launch-bound \(\d+ %\) → (not known yet|resolved|still there)", told), told
    assert "decode 13." in told and "× faster" in told


def test_recorded_words_become_code_spans_never_escapes():
    assert prose("stall in `detokenize` [x](http://a) <img> a|b") == \
        "stall in `detokenize` `[x](http://a)` `<img>` `a|b`"


def test_the_full_report_says_agreeing_hosts_and_gpus_once(tmp_path):
    """The real H200 run seen as three hosts (one machine): one Hosts row; the
    demo's eight GPUs that agree: one row of the bandwidth table, and a GPU
    that does not keeps every row."""
    from perftriage.core.report.bandwidth import _gpu_rows

    r = CliRunner().invoke(cli, ["report", str(FIXTURES / "gpm" / "h200-run2" / "transcript.jsonl"),
                                 "-o", "-"])
    hosts = r.output.split("## Hosts\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert hosts == ["- **localhost**, **viadmon**, **viapynvml** (up): 1 × NVIDIA H200, 140 GiB; "
                     "126 GiB RAM, 4814 GB/s per GPU"]
    gpus = [ev.GpuCounters(index=i, name="G", dram_busy_pct=90.0 + i % 3, dram_bw_gbs=1600.0 + i,
                           sm_active_pct=90.0, tensor_active_pct=29.0) for i in range(8)]
    assert _gpu_rows(gpus) == ["| 0–7 (all 8 alike) | G | 1600–1607 | 90–92 | 90 | 29 |"]
    gpus[3] = ev.GpuCounters(index=3, name="G", dram_busy_pct=40.0, dram_bw_gbs=700.0)
    assert len(_gpu_rows(gpus)) == 8
