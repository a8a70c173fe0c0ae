"""The stacks probe's core on real py-spy 0.4.3 output (tests/fixtures/stacks):
folded stacks and dumps read into samples, summarised per process and
thread (self and inclusive shares, idle and GIL shares), the verdicts of
each failure, and the remote command's quoting."""

from __future__ import annotations

import json
import shlex

import msgspec
import pytest

from perftriage.core.probe_kinds.kind import RESULT_MARK, HostContext, ProbeUsageError
from perftriage.core.probe_kinds.stacks_kind import (
    STACKS_KIND,
    answer,
    json_fields,
    parse_args,
    summarise_result,
)
from perftriage.core.model.state import ProbeState
from perftriage.core.stacks.folded import Frame, parse_dump, parse_frame, parse_raw
from perftriage.core.stacks.compare import baseline
from perftriage.core.stacks.samples import short_command, short_where, where
from perftriage.core.stacks.summary import FrameRow, summarise_process
from tests.support.stacks_support import TARGET, result, text
from tests.support.stall_target import STALL_FUNCTION



def test_a_frame_reads_as_py_spy_writes_it():
    assert parse_frame("main (tests/support/stall_target.py:55)") == \
        Frame("main", "tests/support/stall_target.py", 55)
    assert parse_frame("_run_code (<frozen runpy>:88)") == Frame("_run_code", "<frozen runpy>", 88)
    assert parse_frame("clock_nanosleep (libc.so.6)") == Frame("clock_nanosleep", "libc.so.6")
    assert parse_frame("0x7f1b6744524a") == Frame("0x7f1b6744524a", "")
    assert parse_frame("f (a (b).py:3)").line == 3  # odd names: the last " (" decides


def test_record_names_the_planted_stall():
    parsed = parse_raw(text("record-threads.raw"))
    assert parsed.bad_lines == 0 and sum(s.count for s in parsed.samples) == 160
    p = summarise_process(7, TARGET, parsed.samples, mode="record", ticks=200)
    top = p.frames[0]
    assert (top.name, top.file) == (STALL_FUNCTION, "tests/support/stall_target.py")
    assert top.self_samples == 140 and top.self_pct == pytest.approx(87.5)
    assert top.line == 27  # the line most of its samples were on (116 of 140)
    main = next(f for f in p.frames if f.name == "main")
    assert main.total_pct == pytest.approx(100.0) and main.self_pct < 15
    assert [f.self_pct for f in p.frames] == sorted((f.self_pct for f in p.frames), reverse=True)
    (thread,) = p.threads
    assert (thread.name, thread.samples, thread.idle_pct) == ("MainThread", 160, 20.0)
    assert p.idle_pct == 20.0 and p.gil_pct is None  # idle: ticks py-spy found no active stack
    assert p.stacks[0].samples == 116 and p.stacks[0].frames[-1].startswith(STALL_FUNCTION)


def test_gil_share_of_a_gil_record():
    parsed = parse_raw(text("record-gil.raw"))
    p = summarise_process(7, TARGET, parsed.samples, mode="record", ticks=200, gil=True)
    assert p.gil_pct == pytest.approx(100 * 155 / 200) and p.threads[0].gil_pct == p.gil_pct
    assert p.frames[0].name == STALL_FUNCTION


def test_raw_without_threads_and_with_native_frames():
    plain = parse_raw(text("record-plain.raw"))
    assert all(s.thread_id is None for s in plain.samples)
    p = summarise_process(7, TARGET, plain.samples, mode="record", ticks=100)
    assert p.frames[0].name == STALL_FUNCTION and p.threads[0].name == ""
    native = parse_raw(text("record-native.raw"))
    files = {f.file for s in native.samples for f in s.frames}
    assert any(f.endswith(".so") or ".so." in f for f in files)  # libc, libpython frames
    assert any(f.line is None for s in native.samples for f in s.frames)


def test_dump_counts_threads_idle_and_gil():
    parsed = parse_dump(text("dump.json"))
    assert {s.thread_name for s in parsed.samples} == {"MainThread", "waiter"}
    waiter = next(s for s in parsed.samples if s.thread_name == "waiter")
    assert waiter.idle and waiter.frames[-1].name == "Condition.wait"  # leaf last, as in raw
    p = summarise_process(7, TARGET, parsed.samples, mode="dump", gil=True)
    assert p.samples == 2 and p.idle_pct == 50.0 and p.gil_pct == 50.0
    assert {t.name: t.idle_pct for t in p.threads} == {"MainThread": 0.0, "waiter": 100.0}
    native = parse_dump(text("dump-native.json"))
    assert any(f.line is None for s in native.samples for f in s.frames)


def test_bad_lines_are_counted_never_fatal():
    parsed = parse_raw("garbage\nthread (1): T;f (a.py:1) 3\n\x1b[31mno count\nx (b.py:2) notanumber\n")
    assert parsed.bad_lines == 3 and [s.count for s in parsed.samples] == [3]
    with pytest.raises(ValueError):
        parse_dump("{not json")


# --- the kind: arguments, command, verdicts --------------------------------------------------


def test_arguments():
    assert parse_args([]).seconds is None  # a dump
    a = parse_args(["--match", "sglang::sched", "--seconds", "3", "--native", "--gil"])
    assert (a.match, a.seconds, a.native, a.gil, a.pid) == ("sglang::sched", 3, True, True, None)
    assert parse_args(["--pid=42"]).pid == 42
    for bad in (["--pid", "x"], ["--pid", "1", "--match", "y"], ["--seconds", "0"],
                ["--seconds"], ["--frobnicate"], ["--seconds", "nan"],
                ["--seconds", "0.5"], ["--seconds", "601"]):  # py-spy takes whole seconds
        with pytest.raises(ProbeUsageError):
            STACKS_KIND.validate(bad)


def test_a_hostile_match_is_data_in_the_command():
    evil = "$(touch /tmp/pwned); `id` ' \" \\"
    command = STACKS_KIND.build(["--match", evil], HostContext(python="/opt/py 3/bin/python"))
    words = shlex.split(command)
    assert words[0] == "/opt/py 3/bin/python" and words[1] == "-c"
    assert evil in words[2:]  # one argv word, never script text
    assert evil not in words[2]


def probe_of(args: list[str], verdict) -> ProbeState:
    return ProbeState(probe_id="p1", host="gpu-a", kind="stacks", args=args,
                      status=verdict.status, summary=verdict.summary, detail=verdict.detail)


def test_ok_verdict_summary_answer_and_json():
    args = ["--match", "stall_target", "--seconds", "2"]
    out = result([{"pid": 7, "name": TARGET, "rc": 0, "out": text("record-threads.raw"),
                   "err": ""}])
    v = STACKS_KIND.interpret(args, 0, out, "")
    assert v.status == "ok"
    # of wall time first (160 busy samples of 200 ticks), then of the busy samples
    assert v.summary.startswith(f"{STALL_FUNCTION} (tests/support/stall_target.py:27) 70.0 % "
                                "of wall time, 87.5 % of pid 7's 160 busy samples")
    assert "idle 20 %" in v.summary and "2 s at 100 Hz" in v.summary
    assert v.files == {"7.folded": text("record-threads.raw")}  # kept beside the transcript
    p = probe_of(args, v)
    doc = json_fields(p)
    assert list(doc["processes"][0])[:7] == ["pid", "name", "samples", "idle_pct", "gil_pct",
                                             "threads", "frames"]
    assert list(doc["processes"][0]["frames"][0])[:5] == ["name", "file", "line", "self_pct",
                                                         "total_pct"]
    assert list(doc["top"])[:4] == ["name", "file", "line", "self_pct"]
    assert doc["top"]["name"] == STALL_FUNCTION
    lines = answer(p)
    assert lines[0] == f"pid 7 {TARGET}: 160 samples, idle 20 %"
    assert STALL_FUNCTION in lines[2]
    assert len(v.detail["processes"][0]["frames"]) <= 50  # the event's bound


def test_py_spy_missing_says_how_to_install_it():
    out = result([{"pid": 7, "name": TARGET}], pyspy=None, tried=["/usr/bin/py-spy"])
    v = STACKS_KIND.interpret([], 1, out, "")
    assert v.status == "failed" and "pip install py-spy" in v.summary
    assert "server's venv" in v.summary and v.detail["tried"] == ["/usr/bin/py-spy"]


@pytest.mark.parametrize("stderr", ["err-ptrace-nonroot.stderr", "err-permission.stderr"])
def test_ptrace_refused_says_so(stderr: str):
    out = result([{"pid": 7, "name": TARGET, "rc": 1, "out": "", "err": text(stderr)}],
                 euid=1000, ptrace_scope="1", cap_sys_ptrace=False)
    v = STACKS_KIND.interpret([], 1, out, "")
    assert v.status == "failed" and v.summary.startswith("ptrace refused: py-spy said ")
    assert "Permission" in v.summary  # what py-spy said
    assert "run it as root" in v.summary and "kernel.yama.ptrace_scope is 1" in v.summary
    assert "SYS_PTRACE" in v.summary


def test_ptrace_refused_as_root_names_no_remedy_that_does_not_apply():
    """`--pid 1` as root: py-spy's "Permission denied", never "needs root"."""
    out = result([{"pid": 1, "name": "/sbin/init", "rc": 1, "out": "",
                   "err": text("err-permission.stderr")}],
                 euid=0, ptrace_scope="1", cap_sys_ptrace=True)
    v = STACKS_KIND.interpret(["--pid", "1"], 1, out, "")
    assert v.summary.startswith("ptrace refused: py-spy said '0: Permission denied (os error 13)'")
    assert "root" in v.summary and "needs root" not in v.summary
    assert "run it as root" not in v.summary and "ptrace_scope" not in v.summary
    assert "ran as root with SYS_PTRACE" in v.summary


def test_one_sample_one_process_are_singular_and_a_native_dump_says_it_paused():
    out = result([{"pid": 8, "name": TARGET, "rc": 0, "out": text("dump-native.json"),
                   "err": ""}])
    v = STACKS_KIND.interpret(["--native"], 0, out, "")
    assert "(1 process, one dump, --native paused the process)" in v.summary
    none = STACKS_KIND.interpret(["--match", "x"], 1, result([], seen=[[11, "python3"]],
                                                            seen_total=1), "")
    assert none.summary == "no --match 'x' process: 1 Python process seen"
    one = summarise_process(7, TARGET, [parse_raw("a (a.py:1) 1").samples[0]], mode="record")
    p = ProbeState(probe_id="p1", host="gpu-a", kind="stacks", args=[], status="ok",
                   summary="", detail={"processes": [msgspec.to_builtins(one)], "top": None})
    assert answer(p)[0] == f"pid 7 {TARGET}: 1 sample"


def test_short_where_keeps_the_file_name_and_line():
    f = FrameRow("step", "/opt/venv/lib/python3.11/site-packages/perftriage/sim/engine.py",
                 412, 10.0, 20.0)
    assert short_where(f, 200) == where(f)
    assert short_where(f, 30) == "…/perftriage/sim/engine.py:412"
    assert short_where(f, 12) == "…/engine.py:412"  # never cut inside the file name
    assert short_where(FrameRow("f", "<frozen runpy>", 88, 0.0, 0.0), 5) == "<frozen runpy>:88"


def test_short_command_cuts_at_a_word_with_an_ellipsis():
    cmd = "/usr/bin/python3 -m tests.support.sglang_sim --random-seed 7 --port 30000"
    assert short_command(cmd, 200) == cmd
    assert short_command(cmd, 48) == "/usr/bin/python3 -m tests.support.sglang_sim …"
    assert len(short_command(cmd, 48)) <= 48


def test_like_compares_with_like():
    kinds = ["dump", "record", "record --gil", "record"]
    assert baseline(kinds, 0) is None
    assert baseline(kinds, 1) == (0, False)  # no earlier record: the kinds differ
    assert baseline(kinds, 2) == (1, False)
    assert baseline(kinds, 3) == (1, True)  # skips the --gil record


def test_a_process_that_exited_and_one_that_was_read():
    out = result([{"pid": 7, "name": TARGET, "rc": 1, "out": "", "err": text("err-no-process.stderr")},
                  {"pid": 8, "name": TARGET, "rc": 0, "out": text("dump.json"), "err": ""}])
    v = STACKS_KIND.interpret([], 0, out, "")
    assert v.status == "ok" and "1 process not read" in v.summary
    s = summarise_result([], json.loads(out.split(RESULT_MARK)[1]))
    assert s.processes[0].error == "the process exited" and s.mode == "dump"


def test_no_match_lists_the_python_processes_seen():
    seen = [[11, "python3 -m http.server"], [12, "python3 train.py"]]
    out = result([], seen=seen, seen_total=2)
    v = STACKS_KIND.interpret(["--match", "sglang"], 1, out, "")
    assert v.status == "no-match" and v.summary == "no --match 'sglang' process: 2 Python processes seen"
    assert answer(probe_of(["--match", "sglang"], v)) == [
        "seen: pid 11: python3 -m http.server", "seen: pid 12: python3 train.py"]


def test_no_result_line_is_an_error_verdict():
    v = STACKS_KIND.interpret([], 127, "", "sh: python3: not found")
    assert v.status == "error" and "python not found" in v.summary


# --- check signals -------------------------------------------------------------------------


def _state_with_stacks(t: float = 100.0):
    from perftriage.core.model import events as ev
    from perftriage.core.model.reducer import apply
    from perftriage.core.model.state import SessionState

    args = ["--seconds", "2"]
    out = result([{"pid": 7, "name": TARGET, "rc": 0, "out": text("record-threads.raw"),
                   "err": ""}])
    v = STACKS_KIND.interpret(args, 0, out, "")
    state = SessionState()
    apply(state, ev.ProbeQueued(probe_id="p1", host="gpu-a", kind="stacks", args=args, t=t - 3))
    apply(state, ev.ProbeFinished(probe_id="p1", status=v.status, summary=v.summary,
                                  detail=v.detail, t=t))
    return state


def _verdict(state, check: str, now: float = 101.0) -> tuple[str, str]:
    from perftriage.core.checks.verdicts import Evaluator
    from perftriage.core.model import events as ev
    from perftriage.core.model.reducer import apply

    apply(state, ev.HypothesisAdded(hyp_id="h1", title="t", check=check))
    for c in Evaluator().tick(state, now):
        apply(state, c)
    v = next(iter(state.hypothesis("h1").verdicts.values()))
    return v.verdict, v.reason


def test_check_signals_read_the_latest_stacks():
    assert _verdict(_state_with_stacks(), f'stacks.top.name == "{STALL_FUNCTION}"')[0] == "supported"
    assert _verdict(_state_with_stacks(), f'stacks.frame["{STALL_FUNCTION}"].pct > 80')[0] \
        == "supported"
    assert _verdict(_state_with_stacks(), 'stacks.frame["main"].self_pct > 50')[0] == "refuted"
    assert _verdict(_state_with_stacks(), "stacks.idle_pct < 30")[0] == "supported"
    verdict, reason = _verdict(_state_with_stacks(), 'stacks.frame["nope"].pct > 1')
    assert verdict == "no data" and 'no frame "nope"' in reason
    verdict, reason = _verdict(_state_with_stacks(), "stacks.idle_pct < 30", now=1000.0)
    assert verdict == "no data" and "stale" in reason  # older than 5 minutes


def test_stacks_signal_names_are_checked():
    from perftriage.core.checks.expr import CheckError, compile_check
    from perftriage.core.checks.catalogue import known_names

    assert 'stacks.frame["NAME"].pct' in known_names() and "stacks.top.name" in known_names()
    for bad, hint in (("stacks.top.nam == 'x'", "did you mean stacks.top.name"),
                      ("stacks.frame > 1", 'stacks.frame["NAME"].FIELD'),
                      ('stacks.frame["x"].pcts > 1', "did you mean stacks.frame.pct")):
        with pytest.raises(CheckError) as err:
            compile_check(bad)
        assert hint in str(err.value)
