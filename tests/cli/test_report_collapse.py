"""The report leaves out what says nothing: stacks samples too small to read
(a py-spy dump of a process with two threads: "p5, p6: 2 samples each, not
shown") and a profile capture that says what the one before it said, within
noise ("prof2 = prof1 within noise"); captures that differ are both shown.
On real recordings: py-spy output (tests/fixtures/stacks), H200 traces
(tests/fixtures/profile) and the H200 run of tests/fixtures/gpm/h200-run."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.compare.profile_diff import within_noise
from perftriage.core.model import events as ev
from perftriage.core.probe_kinds.stacks_kind import STACKS_KIND
from perftriage.core.profile.summarize import summarize_files
from perftriage.core.stacks.samples import MIN_SAMPLES, sample_count, too_few
from perftriage.core.stacks.summary import from_detail
from perftriage.core.store import investigations
from tests.support.compare_recordings import two_runs
from tests.support.helpers import FIXTURES
from tests.support.stacks_support import result, text

PROF = FIXTURES / "profile"
TABLE_OF_KERNELS = "| kernel | bucket | total ms |"
TABLE_OF_FRAMES = "| frame | where | self | total |"


def _stacks(probe_id: str, fixture: str, args: list[str], t: float) -> list[ev.Event]:
    v = STACKS_KIND.interpret(args, 0, result([{"pid": 4242, "name": "sglang::scheduler_TP0",
                                                "rc": 0, "out": text(fixture), "err": ""}]), "")
    return [ev.ProbeQueued(probe_id=probe_id, host="gpu-a", kind="stacks", args=args, t=t),
            ev.ProbeFinished(probe_id=probe_id, status=v.status, summary=v.summary,
                             detail=v.detail, t=t + 1.0)]


def _capture(capture_id: str, trace: str, t: float) -> ev.ProfileCaptured:
    return ev.ProfileCaptured(capture_id=capture_id, host="gpu-a", engine="sglang", steps=5,
                              summary=summarize_files([PROF / f"{trace}.trace.json.gz"]), t=t)


def _transcript(path: Path, events: list[ev.Event]) -> Path:
    header = investigations.header_for(path.stem, "2026-12-04T01:00:00+00:00", ["gpu-a"])
    with open(path, "wb") as fh:
        fh.write(json.dumps(header).encode() + b"\n")
        for e in events:
            fh.write(ev.encode(e) + b"\n")
    return path


def _report(path: Path) -> str:
    r = CliRunner().invoke(cli, ["report", str(path), "-o", "-"])
    assert r.exit_code == 0, r.output
    return r.stdout


def _section(md: str, title: str) -> str:
    start = md.index(title)
    end = md.find("\n## ", start + len(title))
    return md[start:] if end < 0 else md[start:end]


def test_two_dumps_of_two_threads_are_one_line_and_no_table(tmp_path: Path):
    events = [*_stacks("p1", "record-threads.raw", ["--seconds", "2"], 10.0),
              *_stacks("p5", "dump.json", ["--dump"], 20.0),
              *_stacks("p6", "dump.json", ["--dump"], 30.0)]
    md = _report(_transcript(tmp_path / "dumps.jsonl", events))
    stacks = _section(md, "## Stacks")
    assert "p5, p6: 2 samples each, not shown (fewer than 5 samples" in stacks
    assert "### p5" not in md and "### p6" not in md
    assert stacks.count(TABLE_OF_FRAMES) == 1 and "### p1" in stacks  # the record: 160 samples
    # nor in the probe timeline: its rows stay, their frames are not printed again
    timeline = _section(md, "## Probe timeline")
    assert "| p5 | gpu-a | `stacks --dump` | ok |" in timeline
    assert "**p5**" not in timeline and "**p6**" not in timeline and "**p1**" in timeline
    assert "idle_waiter_q7x" not in md  # a frame only the dumps hold


def test_the_threshold_is_the_samples_read():
    def summary(fixture: str, args: list[str]):
        finished = _stacks("p1", fixture, args, 0.0)[1]
        assert isinstance(finished, ev.ProbeFinished)
        return from_detail(finished.detail)

    dump, record = summary("dump.json", []), summary("record-threads.raw", ["--seconds", "2"])
    assert dump is not None and record is not None
    assert sample_count(dump) == 2 < MIN_SAMPLES and too_few(dump)
    assert sample_count(record) == 160 and not too_few(record)


def test_a_single_small_dump_and_dumps_of_different_sizes(tmp_path: Path):
    one = _report(_transcript(tmp_path / "one.jsonl", _stacks("p3", "dump.json", [], 5.0)))
    assert "p3: 2 samples, not shown" in one and TABLE_OF_FRAMES not in one
    # a dump of a process with 6 threads is enough to show; one of 2 and one of 4 are not
    big = json.loads(text("dump.json")) * 3
    four = json.loads(text("dump.json")) * 2

    def dump_of(pid: str, threads: list, t: float) -> list[ev.Event]:
        v = STACKS_KIND.interpret([], 0, result([{"pid": 7, "name": "python3", "rc": 0,
                                                  "out": json.dumps(threads), "err": ""}]), "")
        return [ev.ProbeQueued(probe_id=pid, host="gpu-a", kind="stacks", args=[], t=t),
                ev.ProbeFinished(probe_id=pid, status="ok", summary=v.summary, detail=v.detail,
                                 t=t + 1)]

    md = _report(_transcript(tmp_path / "mixed.jsonl", [
        *_stacks("p1", "dump.json", [], 1.0), *dump_of("p2", four, 3.0),
        *dump_of("p3", big, 5.0)]))
    assert "p1 (2 samples), p2 (4 samples): not shown" in md
    assert "### p3" in md and _section(md, "## Stacks").count(TABLE_OF_FRAMES) == 1
    assert "not compared with" not in md and "since p" not in md  # nothing shown before p3


def test_two_captures_of_one_trace_are_shown_once(tmp_path: Path):
    md = _report(_transcript(tmp_path / "same.jsonl", [
        _capture("prof1", "eager-TP-0", 10.0), _capture("prof2", "eager-TP-0", 40.0)]))
    profiles = _section(md, "## Profiles")
    assert profiles.count(TABLE_OF_KERNELS) == 1 and profiles.count("within noise") == 1
    assert "prof2 = prof1 within noise (GPU idle 85.2 → 85.2 %, step 3.9 → 3.9 ms" in profiles
    assert "### prof2" in profiles and "Against prof1" not in profiles


def test_two_ranks_of_one_loop_are_the_same_within_noise(tmp_path: Path):
    """The real noise: the two eager ranks of one loop on one H200, captured as
    two captures (idle 85.2 and 84.6 %, step 3.91 and 3.75 ms)."""
    a, b = _capture("prof1", "eager-TP-0", 10.0), _capture("prof2", "eager-TP-1", 40.0)
    assert within_noise(a, b) and within_noise(b, a)
    md = _report(_transcript(tmp_path / "ranks.jsonl", [a, b]))
    assert "prof2 = prof1 within noise (GPU idle 85.2 → 84.6 %, step 3.91 → 3.75 ms" in md
    assert _section(md, "## Profiles").count(TABLE_OF_KERNELS) == 1


def test_captures_that_differ_are_both_shown(tmp_path: Path):
    # eager against its CUDA-graph replay: the same kernels, idle 85 → 4 %;
    # a stall against the same stall with host syncs: the same kernels, idle 68 → 74 %
    for first, second in (("eager-TP-0", "graph-TP-0"), ("stall-TP-0", "stallsync-TP-0")):
        a, b = _capture("prof1", first, 10.0), _capture("prof2", second, 40.0)
        assert not within_noise(a, b), (first, second)
        md = _report(_transcript(tmp_path / f"{second}.jsonl", [a, b]))
        profiles = _section(md, "## Profiles")
        assert profiles.count(TABLE_OF_KERNELS) == 2 and "within noise" not in profiles
        assert "Against prof1:" in profiles


def test_a_capture_is_compared_with_the_last_one_shown(tmp_path: Path):
    """prof3 = prof1 (prof2 differs): shown, since prof2 is what it follows."""
    md = _report(_transcript(tmp_path / "abab.jsonl", [
        _capture("prof1", "eager-TP-0", 10.0), _capture("prof2", "eager-TP-1", 20.0),
        _capture("prof3", "graph-TP-0", 30.0), _capture("prof4", "graph-TP-0", 40.0)]))
    profiles = _section(md, "## Profiles")
    assert "prof2 = prof1 within noise" in profiles and "prof4 = prof3 within noise" in profiles
    assert profiles.count(TABLE_OF_KERNELS) == 2 and "Against prof2:" in profiles


def test_a_real_recording_still_renders_both_its_captures(tmp_path: Path):
    """The H200 run of two runs (eager in run 1, the graph replay in run 2)."""
    md = _report(two_runs(tmp_path / "moe.jsonl"))
    profiles = _section(md, "## Profiles")
    assert "### prof1" in profiles and "### prof2" in profiles
    assert profiles.count(TABLE_OF_KERNELS) == 2 and "within noise" not in md
    assert "## Before / after" in md
