"""The report opens with the before/after table for an investigation with a
baseline or more than one run, tells the phases of a run whose throughput
changed level (the real H200 run: ~13.6 then ~109 tok/s, not one median),
and leads a profile comparison with step time and idle."""

from __future__ import annotations

import json
from pathlib import Path

from perftriage.core.model import events as ev
from perftriage.core.report.from_file import render_file
from tests.support.compare_recordings import H200_RUN, two_runs


def sections(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("## ")]


def test_two_runs_open_with_the_before_after_table(tmp_path):
    text = render_file(two_runs(tmp_path / "moe.jsonl"))
    assert sections(text)[:4] == ["## Before / after", "## What's wrong (triage)", "## Phases", "## Runs"]
    assert "A: run 1 (0:00–0:34) · B: run 2 (0:34–1:20)" in text
    assert "**B is 8.0× faster than A in decode throughput · localhost (13.6 → 109 tok/s" in text
    assert "| traffic ratio · localhost | 5.0× | 1.0× | 0.20× | < 0.001 | ▲ improved |" in text
    assert "| step time | 3.9 ms | 0.60 ms | 0.15× |  | ▲ improved |" in text
    assert "- server arguments: --moe-runner-backend triton → flashinfer_cutedsl" in text
    assert "straddles run 2" not in text  # a run that starts where A ends is not inside it


def test_profile_comparison_leads_with_step_time_and_idle(tmp_path):
    text = render_file(two_runs(tmp_path / "moe.jsonl"))
    at = text.index("Against prof1:")
    assert text[at:].splitlines()[1] == ("- step 3.9 → 0.60 ms (6.5× faster); GPU idle 85.2 → 3.7 %; "
                                         "kernel time per step 0.58 → 0.58 ms (unchanged)")


def test_one_run_without_a_baseline_tells_its_phases():
    text = render_file(H200_RUN)
    assert "## Before / after" not in text
    rows = [line for line in text.splitlines() if line.startswith("| decode throughput")]
    assert len(rows) == 2
    assert "| 13.6 tok/s |" in rows[0] and rows[0].endswith("| — |")
    assert "| 109 tok/s |" in rows[1] and rows[1].endswith("| 8.01× |")
    at = text.index("### Throughput")
    assert "changed level during the session" in text[at:at + 300]


def test_a_baseline_is_compared_with_what_followed(tmp_path):
    lines = H200_RUN.read_text().splitlines()
    mark = ev.BaselineMarked(start=5.0, end=33.0, label="0:05-0:33", t=33.5)
    path = tmp_path / "with-baseline.jsonl"
    path.write_text("\n".join([lines[0], ev.encode(mark).decode(), *lines[1:]]) + "\n")
    text = render_file(path)
    assert sections(text)[0] == "## Before / after"
    assert "A: baseline 0:05-0:33 · B: after the baseline (0:33–1:20)" in text
    assert json.dumps("improved") and "| decode throughput · localhost | 13.6 tok/s |" in text


def test_phases_of_a_live_recording_with_batches_still_queued():
    # the cockpit's report (M) hands over its live recording, fed event by event:
    # its last log batches are still queued when the phases are read
    from perftriage.core.compare.recording import Recording
    from perftriage.core.report.compare_section import phases_section
    from tests.support.compare_recordings import real_events

    rec = Recording(name="live")
    for e in real_events():
        rec.feed(e)
    rows = [x for x in phases_section(rec) if x.startswith("| decode throughput")]
    assert len(rows) == 2 and rows[1].endswith("| 8.01× |")


def _with_events(tmp_path: Path, *events: ev.Event) -> Path:
    lines = H200_RUN.read_text().splitlines()
    path = tmp_path / "with-events.jsonl"
    path.write_text("\n".join([*lines, *(ev.encode(e).decode() for e in events)]) + "\n")
    return path


def test_the_gap_line_says_the_batch_and_source_the_gap_was_measured_at(tmp_path):
    gap = dict(floor_ms=3.2, ceiling_tps=312.5, bandwidth_gbs_total=4800.0, measured_ms=47.8,
               gap=14.9, efficiency_pct=6.7, t=40.0)
    text = render_file(_with_events(tmp_path, ev.GapComputed(
        **gap, measured_from="engine n1: mean ITL, last 10 s", measured_batch=21)))
    assert ("The server decodes 14.9x slower than the floor: it uses 6.7% of the memory "
            "bandwidth at batch 21 (engine n1: mean ITL, last 10 s).") in text
    # a gap recorded without its source claims no batch
    text = render_file(_with_events(tmp_path, ev.GapComputed(**gap)))
    assert "it uses 6.7% of the memory bandwidth." in text and "at batch 1" not in text


def test_profile_noise_and_rank_counts_in_the_report(tmp_path):
    text = render_file(two_runs(tmp_path / "tp.jsonl", eager_ranks=2))
    warning = "profiles of different rank counts (prof1 2, prof2 1): the work per rank differs"
    before_after = text[:text.index("## Phases")]
    assert f"- ⚠ {warning}" in before_after
    copy = next(line for line in before_after.splitlines()
                if line.startswith("| memcpy/memset per step"))
    assert copy.endswith("| = no change |")
    profiles = text[text.index("Against prof1:"):]
    assert f"- ⚠ {warning}" in profiles.split("\n\n")[0]
    assert "buckets per step" not in profiles.split("\n\n")[0]  # none moved beyond the floor


def test_the_header_says_each_range_once_and_b_starts_at_a_restart(tmp_path):
    # baseline 0:00–0:15, then the server restarted at 0:50 (not a new run): B is
    # what runs since the restart, never a slice across it
    text = render_file(_with_events(
        tmp_path, ev.BaselineMarked(start=0.0, end=15.0, label="0:00–0:15", t=16.0),
        ev.ServerEvent(server="sglang", host="localhost", state="starting", t=50.0)))
    assert "A: baseline 0:00–0:15 · B: after the restart at 0:50 (0:50–1:20)" in text
    assert "straddles a restart" not in text
