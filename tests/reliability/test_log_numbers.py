"""A log line with 5,000-digit counters crashed ``triage``
and ``report`` (int() past Python's 4,300-digit limit, float() to inf then
int(inf)), and live it killed the log source it arrived in: every later
line was lost. A gap of 0 was a ZeroDivisionError in the triage. Numbers are
now read with bounds (``logparse.MAX_DIGITS``); a line that fails is kept
as text and counted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from perftriage.core.model import events as ev
from perftriage.core.parse import batch_scan, logparse
from perftriage.core.store import config as config_mod
from perftriage.core.triage.serving import floor_finding
from perftriage.core.triage.witnesses import Witnesses
from perftriage.core.view.log_status import follow_text
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry, local_host
from perftriage.services.investigation.session import Session
from tests.support.helpers import wait_for

N = "9" * 5000
GOOD = ("[2026-11-28 10:00:0{i} TP0] Decode batch, #running-req: 8, #token: 900, token usage: "
        "0.10, cuda graph: True, gen throughput (token/s): 411.00, #queue-req: 0")
BAD = [
    f"[2026-11-28 10:00:01 TP0] Decode batch, #running-req: {N}, #token: {N}, token usage: 0.10, "
    f"cuda graph: True, gen throughput (token/s): {N}.00, #queue-req: {N}",
    f"[2026-11-28 10:00:01 DP{N} TP0] Decode batch, #running-req: 8, #token: 900, token usage: "
    "0.10, cuda graph: True, gen throughput (token/s): 411.00, #queue-req: 0",
    f"[2026-11-28 10:00:01 TP0] Prefill batch, #new-seq: 1, #new-token: {N}, #cached-token: {N}, "
    f"token usage: 0.1, #running-req: {N}, #queue-req: 0, #pending-token: 0, cuda graph: True, "
    f"input throughput (token/s): {N}",
    f"(APIServer pid=7) INFO 11-28 10:00:01 [loggers.py:123] Engine {N}: Avg prompt throughput: "
    f"{N} tokens/s, Avg generation throughput: {N} tokens/s, Running: {N} reqs, Waiting: 0 reqs, "
    f"GPU KV cache usage: {N}%, Prefix cache hit rate: 0.0%",
    f"INFO 11-28 10:00:01 [x.py:1] Engine 000: MFU: 1.0 TF/s/device {N}.5 GB/s/device",
    "[2026-11-28 10:00:01 TP0] Decode batch, #running-req: 8, #token: 900, token usage: 0.10, "
    "cuda graph: True, gen throughput (token/s): 1e999, #queue-req: 0",
]


def test_bounds() -> None:
    assert logparse.bounded_float("9" * 15) == 999_999_999_999_999.0
    assert logparse.bounded_float("1,234.5") == 1234.5
    for text in ("9" * 16, N, "inf", "nan", ""):
        try:
            logparse.bounded_float(text)
        except logparse.BadNumber:
            continue
        raise AssertionError(text)


def test_a_bad_line_is_kept_as_text_and_counted_the_good_ones_read() -> None:
    lines = [GOOD.format(i=1), *BAD, GOOD.format(i=2)]
    for line in BAD:
        assert logparse.parse_line(line) is None
    found = batch_scan.scan(lines)
    assert found.fast.fast == [0, len(lines) - 1]  # both good lines, read fast
    assert found.unparsed == [1, 2, 3, 4, 5, 6]  # 1e999 too: no reading


DIGITS = st.text("0123456789", min_size=1, max_size=6000)


@settings(max_examples=60, deadline=None)
@given(running=DIGITS, gen=DIGITS, queued=DIGITS, dp=DIGITS, frac=DIGITS)
def test_any_digits_in_any_slot_never_raise(running, gen, queued, dp, frac) -> None:
    lines = [
        f"[2026-11-28 10:00:01 DP{dp} TP0] Decode batch, #running-req: {running}, #token: 9, "
        f"token usage: 0.{frac}, cuda graph: True, gen throughput (token/s): {gen}.{frac}, "
        f"#queue-req: {queued}",
        f"[2026-11-28 10:00:01 TP0] Decode batch, #running-req: {running}, #token: 9, "
        f"token usage: 0.1, cuda graph: True, gen throughput (token/s): {gen}, "
        f"#queue-req: {queued}",
        f"INFO 11-28 10:00:01 [l.py:1] Engine {dp}: Avg prompt throughput: {gen} tokens/s, "
        f"Avg generation throughput: {gen}.{frac} tokens/s, Running: {running} reqs",
    ]
    found = batch_scan.scan(lines)
    for i, rec, _ in found.records():
        assert rec is None or all(abs(v) < 1e16 for v in (rec.gen_tps or 0, rec.running or 0)), i
    for line in lines:
        logparse.parse_line(line)


def test_a_gap_of_0_is_no_finding() -> None:
    for gap in (0.0, -1.0, float("nan")):
        assert floor_finding(Witnesses(host="h", start=0.0, end=60.0, gap=gap)) is None
    assert floor_finding(Witnesses(host="h", start=0.0, end=60.0, gap=1.1)) is not None


def _transcript(tmp_path: Path) -> Path:
    s = Session("numbers", hosts=["localhost"], sessions_dir=tmp_path)
    s.emit(ev.LogSourceOpened(source_id="l1", host="localhost", path="/var/log/x.log"))
    s.emit(ev.LogLines(source_id="l1", lines=[GOOD.format(i=i) for i in range(3)] + BAD
                       + [GOOD.format(i=i) for i in range(4, 9)]))
    for t in range(12):
        s.emit(ev.GapSample(host="localhost", t=float(t), floor_ms=0.0, measured_ms=0.0, gap=0.0))
    s.close()
    return s.path


def _run(*args: str) -> str:
    res = subprocess.run([sys.executable, "-m", "perftriage", *args], capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stdout[-1000:] + res.stderr[-2000:]
    return res.stdout


def test_report_and_triage_read_past_the_bad_lines_and_say_so(tmp_path: Path) -> None:
    path = _transcript(tmp_path)
    report = _run("report", str(path), "-o", "-")
    # (the report reads the lines that say "throughput": the MFU line is not among them)
    assert "- localhost:/var/log/x.log: 5 line(s) kept as text: a number past 15 digits" in report
    assert "localhost:/var/log/x.log: 8 decode lines" in report
    _run("triage", str(path))
    _run("triage", str(path), "--json")
    _run("compare", str(path), str(path))


async def test_live_the_source_reads_on_after_the_line(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("\n".join([GOOD.format(i=1), *BAD]) + "\n")
    reg = HostRegistry()
    reg.add(local_host())
    cockpit = Cockpit(config_mod.Config(), registry=reg,
                      session=Session("live", hosts=reg.names, sessions_dir=tmp_path / "s"),
                      sample_interval=0.5)
    await cockpit.start()
    try:
        sid = cockpit.follow_log("localhost", str(log))
        src = cockpit.session.state.logs
        await wait_for(lambda: sid in src and src[sid].total_lines == 1 + len(BAD), timeout=30)
        with open(log, "a") as fh:
            fh.write(GOOD.format(i=2) + "\n")
        await wait_for(lambda: src[sid].total_lines == 2 + len(BAD), timeout=30)
        assert src[sid].follow == "following" and src[sid].unparsed == len(BAD)
        assert src[sid].metrics.count == 2
        assert follow_text(src[sid], 0.0) == (
            f"following · {2 + len(BAD)} lines · {len(BAD)} kept as text (a number past 15 digits)")
    finally:
        await cockpit.stop()
