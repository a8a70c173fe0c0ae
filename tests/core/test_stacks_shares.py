"""A stacks record's shares read right (issue 41, item 1): the top frame of a
process idle 96 % of the time was shown as "42 % self" — 42 % of the 24 busy
samples, 1.7 % of wall time. Both shares are said, labelled, with the
counts; and ``d`` calls a change only past the noise floor (a two-proportion
test on the sample counts: 41.7 → 47.4 % on 24 vs 19 samples is noise)."""

from __future__ import annotations

import pytest

from perftriage.core.model.state import ProbeState
from perftriage.core.probe_kinds.stacks_kind import STACKS_KIND, parse_args
from perftriage.core.probe_kinds.kind import ProbeUsageError
from perftriage.core.stacks.compare import compare, noise, two_proportion_z
from perftriage.core.stacks.samples import few_text, headline, too_few, top_text
from perftriage.core.stacks.summary import StacksSummary, busy_share, from_detail, wall_pct
from tests.support.stacks_support import result

SIM = "/usr/bin/python3 -m perftriage.simulator.sglang_sim"
STALL = "simulated_host_stall"


def _raw(stall: int, rest: int) -> str:
    """py-spy ``record --format raw --threads``: ``stall`` samples in the
    planted stall, ``rest`` split between two other frames."""
    root = "thread (7): MainThread;<module> (sglang_sim.py:400);serve (sglang_sim.py:380)"
    return (f"{root};simulated_scheduler_pass (sglang_sim.py:120);{STALL} (sglang_sim.py:90) "
            f"{stall}\n{root};decode_step (sglang_sim.py:150) {rest // 2}\n"
            f"{root};recv_requests (sglang_sim.py:170) {rest - rest // 2}\n")


def _record(stall: int, rest: int, seconds: int = 6) -> tuple[ProbeState, StacksSummary]:
    args = ["--seconds", str(seconds)]
    v = STACKS_KIND.interpret(args, 0, result([{"pid": 42, "name": SIM, "rc": 0,
                                                "out": _raw(stall, rest), "err": ""}]), "")
    assert v.status == "ok", v.summary
    p = ProbeState(probe_id="p3", host="h200", kind="stacks", args=args, status="ok",
                   summary=v.summary, detail=v.detail)
    s = from_detail(v.detail)
    assert s is not None
    return p, s


def test_the_top_frame_says_its_share_of_wall_time_and_of_the_busy_samples() -> None:
    p, s = _record(10, 14)  # 24 busy samples of 600 ticks: idle 96 %
    proc = s.processes[0]
    assert proc.samples == 24 and proc.idle_pct == pytest.approx(96.0)
    top = proc.frames[0]
    assert top.name == STALL and top.self_pct == pytest.approx(41.67)
    assert busy_share(proc) == pytest.approx(0.04)
    assert wall_pct(top, proc) == pytest.approx(1.67)  # the one definition
    line = top_text(s)
    assert line is not None
    assert (f"top: {STALL} (sglang_sim.py:90) · self 1.7 % of all samples (wall time) · "
            "41.7 % of the busy ones (10 of 24 samples, idle 96 %)") == line
    assert line in headline(p, s) and "42 % self" not in headline(p, s)
    assert line not in headline(p, s, top=False)
    # the probe's one line leads with wall time too
    assert p.summary.startswith(f"{STALL} (sglang_sim.py:90) 1.7 % of wall time, 41.7 % of "
                                "pid 42's 24 busy samples, idle 96 %")


def test_a_change_is_called_past_the_noise_floor_only() -> None:
    _, before = _record(10, 14)  # 41.7 % of 24
    _, after = _record(9, 10)  # 47.4 % of 19
    assert abs(two_proportion_z(10, 24, 9, 19)) < 1.0
    assert compare(before, after) == ([], [])
    (moved, *_) = noise(before, after)
    assert (moved.name, moved.before_n, moved.before_total, moved.after_n,
            moved.after_total) == (STALL, 10, 24, 9, 19)
    assert not moved.significant
    # the same shares on 100 times the samples: a change
    _, big_before = _record(1000, 1400, seconds=60)
    _, big_after = _record(900, 1000, seconds=60)
    grew, shrank = compare(big_before, big_after)
    assert [c.name for c in grew] == [STALL] and grew[0].significant
    assert {c.name for c in shrank} == {"decode_step", "recv_requests"}


def test_no_evidence_without_samples_or_spread() -> None:
    assert two_proportion_z(0, 0, 5, 10) == 0.0
    assert two_proportion_z(0, 10, 0, 10) == 0.0  # nothing seen either side
    assert two_proportion_z(10, 10, 10, 10) == 0.0


def test_dump_is_one_word_and_not_with_seconds() -> None:
    assert parse_args(["--dump"]).seconds is None
    with pytest.raises(ProbeUsageError, match="not both"):
        parse_args(["--dump", "--seconds", "3"])
    assert STACKS_KIND.form_value == "--seconds 3" and STACKS_KIND.engine


def _empty_record(err: str) -> tuple[ProbeState, StacksSummary]:
    args = ["--seconds", "3"]
    v = STACKS_KIND.interpret(args, 0, result([{"pid": 42, "name": SIM, "rc": 0, "out": "",
                                                "err": err}]), "")
    p = ProbeState(probe_id="p4", host="localhost", kind="stacks", args=args, status=v.status,
                   summary=v.summary, detail=v.detail)
    s = from_detail(v.detail)
    assert s is not None
    return p, s


def test_a_record_with_no_busy_sample_says_the_process_only_waited() -> None:
    """CI's demo: a 3 s record of a simulator that slept through it came back
    with 0 samples, and the view said "only 0 samples: too few for a share
    to say anything". 300 ticks in which no thread ran is an answer."""
    _, s = _empty_record("py-spy> Wrote raw flamegraph data to 'x'. Samples: 0 Errors: 0\n")
    assert too_few(s) and s.processes[0].idle_pct == pytest.approx(100.0)
    assert few_text(s) == ("no busy sample in 3 s at 100 Hz: the process only waited (py-spy "
                           "keeps a sample when a thread runs), idle 100 % of wall time")
    p, few = _record(1, 1)  # 2 busy samples: too few, and not "only waited"
    assert few_text(few) == "only 2 samples: too few for a share to say anything (fewer than 5)"


def test_py_spy_s_failed_reads_are_counted_in_the_notes() -> None:
    p, s = _empty_record("py-spy> Wrote raw flamegraph data to 'x'. Samples: 0 Errors: 300\n")
    assert "py-spy could not read 300 of 300 samples of pid 42" in p.summary
    clean, _ = _empty_record("py-spy> Wrote raw flamegraph data to 'x'. Samples: 9 Errors: 0\n")
    assert "could not read" not in clean.summary
