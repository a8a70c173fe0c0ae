"""Shares inside a recorded stacks or profile summary are bounded where they
are decoded (issue 47, item 9): a crafted transcript carried frame self/total
shares, idle and GIL shares, bucket, kernel and idle-breakdown shares of 133,
594, 800, 1e300 and -5 %; the report, ``replay --json`` and the Stacks and
Profile text views showed them. Each struct bounds its shares when it is
built or decoded (``core/shares.py``), so nothing printed is over 100 or
not a number. NaN cannot be written in a transcript line (the line is
unreadable, skipped and counted); a summary built in-process with NaN or an
infinity holds no share (None) or 0 instead."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.profile.model import (
    BucketShare, GapRange, IdleBreakdown, KernelRow, LongGap, ProfileSummary, RankRow)
from perftriage.core.view.profile_view import headline as profile_headline
from perftriage.core.stacks import samples as stacks_text
from perftriage.core.stacks.summary import (
    FrameRow, ProcessStacks, StackRow, StacksSummary, ThreadRow, TopFrame, from_detail, wall_pct)
from perftriage.core.store.investigations import restore
from perftriage.core.view import profile_view
from tests.support.event_samples import write_transcript

HOSTILE = [133.0, 594.0, 800.0, 1e300, -5.0]
# a share shown in text: a number before a percent sign (inf and nan included)
SHOWN = re.compile(r"(-?(?:\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?|inf|nan))\s*%", re.I)


def _is_share(key: str) -> bool:
    # spread_pct is (max - min) / mean of a kernel's rank times: over 100 is real
    return key.endswith("pct") and key != "spread_pct"


def _push(doc, values):
    """Every share of a summary's builtins set to the next hostile value."""
    if isinstance(doc, dict):
        return {k: next(values) if _is_share(k) and v is not None else _push(v, values)
                for k, v in doc.items()}
    if isinstance(doc, list):
        return [_push(v, values) for v in doc]
    return doc


def stacks_summary() -> StacksSummary:
    frames = [FrameRow("busy_loop", "/srv/app.py", 12, 40.0, 60.0, 40, 60),
              FrameRow("_burn", "/srv/app.py", 3, 20.0, 20.0, 20, 20)]
    proc = ProcessStacks(pid=42, name="python3 -m sglang.launch_server", samples=100,
                         idle_pct=10.0, gil_pct=20.0,
                         threads=[ThreadRow(42, "MainThread", 100, 10.0, 20.0)], frames=frames,
                         stacks=[StackRow(40, 40.0, ["main (/srv/app.py:1)",
                                                     "busy_loop (/srv/app.py:12)"])])
    return StacksSummary([proc], TopFrame("busy_loop", "/srv/app.py", 12, 40.0, 60.0, 42,
                                          proc.name), seconds=5.0, rate=100, gil=True)


def profile_summary() -> ProfileSummary:
    return ProfileSummary(
        files=["t.json"], ranks=2, window_ms=100.0, kernel_ms=80.0, idle_pct=20.0,
        exposed_comm_ms=1.0,
        buckets=[BucketShare("moe", 40.0, 50.0), BucketShare("attention", 40.0, 50.0)],
        kernels=[KernelRow("fused_moe_kernel", "moe", 40.0, 10, 4000.0, 50.0, [20.0, 20.0]),
                 KernelRow("flash_attn", "attention", 40.0, 10, 4000.0, 50.0, [20.0, 20.0])],
        rank_labels=["0", "1"],
        per_rank=[RankRow("0", "t.json", 100.0, 40.0, 20.0, 1.0),
                  RankRow("1", "t.json", 100.0, 40.0, 20.0, 1.0)],
        idle_breakdown=IdleBreakdown(50.0, 30.0, 20.0, 20.0, 10.0, 3, 1.0),
        idle_by_gap_length=[GapRange("1-10ms", 3, 20.0, 100.0, 5.0)],
        long_gaps=[LongGap(5.0, 3.0, "aten::mm", "0", True)])


def crafted(tmp_path: Path, rotate: int) -> Path:
    values = itertools.cycle(HOSTILE[rotate:] + HOSTILE[:rotate])
    stacks = _push(msgspec.to_builtins(stacks_summary()), values)
    profile = _push(msgspec.to_builtins(profile_summary()), values)
    events = [
        {"type": "probe.queued", "probe_id": "p1", "host": "localhost", "kind": "stacks"},
        {"type": "probe.started", "probe_id": "p1"},
        {"type": "probe.finished", "probe_id": "p1", "status": "ok", "exit_status": 0,
         "duration_s": 5.0, "summary": "stacks", "detail": stacks},
        {"type": "profile.captured", "capture_id": "prof1", "host": "localhost",
         "summary": profile, "engine": "sglang"},
    ]
    path = write_transcript(tmp_path / f"crafted-{rotate}.jsonl", events)
    with open(path, "a") as fh:  # NaN is no JSON: this line is unreadable, skipped
        fh.write(json.dumps({**events[3], "capture_id": "prof2", "t": 9.0,
                             "summary": {**profile, "idle_pct": math.nan}}) + "\n")
    return path


def assert_text_bounded(text: str, where: str) -> None:
    shown = SHOWN.findall(text)
    for s in shown:
        v = float(s.replace(",", ""))
        assert math.isfinite(v) and 0.0 <= v <= 100.0, (where, s, text)


def assert_json_bounded(doc, where: str) -> None:
    if isinstance(doc, dict):
        for k, v in doc.items():
            if _is_share(k) and isinstance(v, (int, float)):
                assert math.isfinite(v) and 0.0 <= v <= 100.0, (where, k, v)
            else:
                assert_json_bounded(v, where)
    elif isinstance(doc, list):
        for v in doc:
            assert_json_bounded(v, where)


def _strict(text: str):
    def refuse(name: str):
        raise ValueError(f"not strict JSON: {name}")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("rotate", range(len(HOSTILE)))
def test_recorded_summary_shares_are_bounded_in_report_and_replay_json(tmp_path, rotate):
    path = crafted(tmp_path, rotate)
    runner = CliRunner()
    r = runner.invoke(cli, ["report", str(path), "-o", "-"])
    assert r.exit_code == 0, r.output
    assert "busy_loop" in r.stdout and "fused_moe_kernel" in r.stdout  # both sections shown
    assert SHOWN.findall(r.stdout)  # the check below has shares to look at
    assert_text_bounded(r.stdout, "report")
    r = runner.invoke(cli, ["replay", str(path), "--json"])
    assert r.exit_code == 0, r.output
    # the findings the recorded capture yields, and their evidence text
    assert_json_bounded(_strict(r.stdout), "replay --json")
    assert_text_bounded(r.stdout, "replay --json")


@pytest.mark.parametrize("rotate", range(len(HOSTILE)))
def test_recorded_summary_shares_are_bounded_in_the_text_views(tmp_path, rotate):
    state = restore(crafted(tmp_path, rotate)).state
    assert [c.capture_id for c in state.profiles] == ["prof1"]  # the NaN line: skipped
    cap = state.profiles[0]
    lines = [profile_headline(cap), profile_view.top_kernel_line(cap.summary) or ""]
    lines += [text for _, text in profile_view.evidence_lines(cap)]
    assert_text_bounded("\n".join(lines), "profile view")
    for width in (10, 60):
        cells = profile_view.bar_segments(cap.summary, width)
        assert sum(c.cells for c in cells) <= width
        assert all(0.0 <= c.pct <= 100.0 for c in cells)
    [(probe, s)] = stacks_text.samples(state)
    proc = s.processes[0]
    lines = [stacks_text.headline(probe, s), stacks_text.shares_text(proc),
             stacks_text.top_text(s) or ""]
    assert_text_bounded("\n".join(lines), "stacks view")
    walls = [wall_pct(f, proc) for f in proc.frames] + [wall_pct(s.top, proc)]  # type: ignore[arg-type]
    assert all(0.0 <= w <= 100.0 for w in walls), walls
    for f in proc.frames:
        assert 0.0 <= f.self_pct <= 100.0 and 0.0 <= f.total_pct <= 100.0


def test_no_number_is_no_share_in_a_summary_built_in_process():
    """NaN and infinities reach a summary only in-process (a detail dict, a
    struct built by hand): a share that may be None becomes None, one that
    must be a number 0."""
    doc = msgspec.to_builtins(stacks_summary())
    values = itertools.cycle([math.nan, math.inf, -math.inf])
    s = from_detail(_push(doc, values))
    assert s is not None
    proc = s.processes[0]
    optional = [proc.idle_pct, proc.gil_pct, proc.threads[0].idle_pct, proc.threads[0].gil_pct]
    assert optional == [None] * 4
    assert [v for f in proc.frames for v in (f.self_pct, f.total_pct)] == [0.0] * 4
    assert s.top is not None and (s.top.self_pct, s.top.total_pct) == (0.0, 0.0)
    p = ProfileSummary(**{**msgspec.structs.asdict(profile_summary()), "idle_pct": math.inf,
                          "buckets": [BucketShare("moe", 1.0, math.nan)]})
    assert p.idle_pct is None and p.buckets[0].pct == 0.0
    assert KernelRow("k", "moe", 1.0, 1, 1.0, 800.0).pct == 100.0
    assert IdleBreakdown(-5.0, 1e300, 50.0, after_sync_pct=133.0) == IdleBreakdown(
        0.0, 100.0, 50.0, after_sync_pct=100.0)
