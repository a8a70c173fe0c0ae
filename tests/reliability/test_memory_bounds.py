"""Bounded memory: a probe's output streams into its cap instead
of being buffered whole, locally and over SSH; past the transcript log cap a
flood of metric lines is recorded at most once a second per source."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from perftriage.core.model import events as ev
from perftriage.core.store import transcript
from perftriage.services.logs.follower import LogFollower
from perftriage.services.sources.logs import CommandLogSource
from perftriage.services.investigation.session import Session
from perftriage.transport.base import OUTPUT_TAIL_BYTES
from perftriage.transport.local import LocalTransport

BIG = 100_000_000
FLOOD = f"head -c {BIG} /dev/zero | tr '\\0' x; echo; echo RESULT-LINE"


def test_a_probe_printing_100mb_stays_small(tmp_path):
    """Before: the whole 100 MB was buffered (~390 MB peak RSS)."""
    cfg = tmp_path / "config.toml"
    cfg.write_text('[[hosts]]\nname = "localhost"\n')
    child = (
        "import resource, subprocess, sys, json\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(json.dumps({'rc': p.returncode, 'out': p.stdout,\n"
        "  'rss_mib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))\n")
    run = subprocess.run(
        [sys.executable, "-c", child, sys.executable, "-m", "perftriage", "--config", str(cfg),
         "probe", "--json", "shell", FLOOD], capture_output=True, text=True, timeout=120)
    got = json.loads(run.stdout)
    assert got["rc"] == 0, got["out"][-500:]
    record = json.loads(got["out"])
    assert record["stdout"].rstrip().endswith("RESULT-LINE")  # the tail still arrives
    assert "bytes not kept" in record["stdout"]
    assert record["detail"]["stdout_dropped_chars"] >= BIG - 1_000_000
    assert got["rss_mib"] < 150, got["rss_mib"]


async def test_local_run_keeps_head_and_tail_and_counts_the_rest():
    t = LocalTransport()
    res = await t.run("head -c 5000000 /dev/zero | tr '\\0' y; echo; echo LAST; echo err >&2",
                      limit=10_000)
    assert res.exit_status == 0
    assert res.stdout.startswith("y" * 10_000)
    assert res.stdout.rstrip().endswith("LAST")
    assert len(res.stdout) < 10_000 + OUTPUT_TAIL_BYTES * 3
    assert res.stdout_dropped > 4_700_000 and res.stderr == "err\n" and res.stderr_dropped == 0
    small = await t.run("echo hi", limit=10)
    assert (small.stdout, small.stdout_dropped) == ("hi\n", 0)


@pytest.mark.ssh
async def test_ssh_run_keeps_its_cap_and_the_pool_stays_framed(sshd):
    from perftriage.transport.ssh import SSHTransport

    t = SSHTransport("box", sshd.alias, ssh_config=sshd.ssh_config, connect_timeout=10.0)
    try:
        res = await t.run("head -c 20000000 /dev/zero | tr '\\0' z; echo; echo LAST; "
                          "head -c 3000000 /dev/zero | tr '\\0' e >&2; exit 3", limit=50_000)
        assert res.exit_status == 3
        assert res.stdout.startswith("z" * 50_000) and res.stdout.rstrip().endswith("LAST")
        assert len(res.stdout) < 50_000 + OUTPUT_TAIL_BYTES * 3
        assert res.stdout_dropped > 19_000_000
        assert len(res.stderr) < 50_000 + OUTPUT_TAIL_BYTES * 3 and res.stderr_dropped > 2_000_000
        after = await t.run("echo next")  # the same pool shell, framing intact
        assert (after.exit_status, after.stdout) == (0, "next\n")
    finally:
        await t.close()


DECODE = ("[2026-11-28 09:16:06 TP0] Decode batch, #running-req: 1, #token: 852, token usage: "
          "0.00, cuda graph: True, gen throughput (token/s): {:.2f}, #queue-req: 0")


def test_metric_flood_past_the_cap_is_recorded_once_a_second(tmp_path, monkeypatch):
    """Before: every metric line passed the cap (a 1M-line flood wrote 178 MB)."""
    import perftriage.services.logs.follower as lf

    clock = [1000.0]
    monkeypatch.setattr(lf.time, "monotonic", lambda: clock[0])
    session = Session(sessions_dir=tmp_path)
    follower = LogFollower(session, None, transcript_cap=10)
    session.emit(ev.LogSourceOpened(source_id="s", host="localhost", path="x"))
    src = CommandLogSource(follower, "s", "localhost", "x", "file", "")
    batches, per_batch = 40, 250
    for b in range(batches):  # 10 000 metric lines over 10 s of (fake) time
        lines = [DECODE.format(b * per_batch + i) for i in range(per_batch)]
        if b == 7:
            lines.append("[2026-11-28 09:16:07] The server is fired up and ready to roll!")
        follower.emit_lines(src, lines)
        clock[0] += 0.25
    live = session.state.logs["s"]
    assert live.total_lines == batches * per_batch + 1  # the live view saw them all
    session.close()
    recorded = [e for e in transcript.read(session.path).events if isinstance(e, ev.LogLines)]
    kept = [ln for e in recorded for ln in e.lines]
    metric_kept = [ln for ln in kept if "Decode batch" in ln]
    assert len(metric_kept) == 10 + 10  # the first 10 (under the cap), then one per second
    assert any("fired up" in ln for ln in kept)  # milestones always kept
    assert sum(e.dropped for e in recorded) == batches * per_batch + 1 - len(kept)
    # the recorded metric line of a second is the latest of its batch
    assert metric_kept[10] == DECODE.format(per_batch - 1)


def test_an_endless_line_is_cut_not_held():
    """A streamed line with no newline was held whole (and re-copied per chunk)."""
    from perftriage.transport.base import MAX_LINE_CHARS, LineSplitter

    s = LineSplitter()
    out = s.feed("a\nb")
    for _ in range(400):  # 100 MiB without a newline
        out += s.feed("x" * 262_144)
        assert len(s._tail) <= MAX_LINE_CHARS
    out += s.feed("yy\nnext\n" + "z" * 100_000 + "\nshort\ntail")
    out += s.flush()
    total = 1 + 400 * 262_144 + 2
    assert out[0] == "a" and out[2:] == ["next", out[3], "short", "tail"]
    assert out[1].startswith("b" + "x" * 100)
    assert out[1].endswith(f" […{total - MAX_LINE_CHARS:,} chars cut]")
    assert out[3] == "z" * MAX_LINE_CHARS + f" […{100_000 - MAX_LINE_CHARS:,} chars cut]"


async def test_following_a_log_with_an_endless_line(tmp_path):
    from perftriage.services.hosts.registry import HostRegistry, local_host
    from tests.support.helpers import wait_for

    log = tmp_path / "x.log"
    with open(log, "w") as fh:
        fh.write("first\n" + "q" * 20_000_000 + "\nafter\n")
    session = Session(sessions_dir=tmp_path / "s")
    reg = HostRegistry()
    reg.add(local_host())
    follower = LogFollower(session, reg)
    sid = follower.open_file("localhost", str(log))
    src = session.state.logs[sid]
    await wait_for(lambda: "after" in list(src.lines), timeout=30)
    await follower.close_all()
    session.close()
    lines = list(src.lines)
    assert lines[0] == "first" and lines[-1] == "after"
    assert len(lines[1]) < 70_000 and lines[1].endswith("chars cut]")
    assert session.path.stat().st_size < 1_000_000
