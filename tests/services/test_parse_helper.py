"""The parse helper for log floods: a real helper process triages batches
exactly as the app would, the pipe emits them in order whatever happens to
the helper, and a followed flood reduces to the state its transcript
replays to."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tests.support.helpers import FIXTURES, wait_for
from perftriage.core.model import events as ev
from perftriage.core.model.reducer import replay
from perftriage.core.parse import batch_scan as bs
from perftriage.core.store import transcript
from perftriage.services.flood.batch_pipe import BatchPipe
from perftriage.services.hosts.registry import HostRegistry, local_host
from perftriage.services.logs.follower import LogFollower
from perftriage.services.flood.scan_worker import ScanWorker
from perftriage.services.investigation.session import Session

FIXTURES = FIXTURES


def real_and_simulated_lines() -> list[str]:
    """Real SGLang/vLLM logs (fixtures and the H200 stand-in run's server log),
    the simulator's flood, and hostile text (controls, a lone surrogate)."""
    from perftriage.simulator.sglang_sim import Steady, startup_lines

    lines: list[str] = []
    for path in [*sorted((FIXTURES / "logs").glob("*.log")), FIXTURES / "gpm" / "standin-server.log"]:
        lines += path.read_text(errors="replace").splitlines()
    sim = Steady(seed=5, error_every=97)
    lines += [text for _, text in startup_lines()] + [sim.line() for _ in range(5000)]
    lines += ["\x1b]52;c;aGk=\x07 Decode batch", "bad \udcff byte", "", "tail: x", "é ünïcode"]
    return lines


def normal(found: bs.Scan) -> tuple:
    """A scan's meaning (a candidate line that says nothing is no part of it)."""
    f = found.fast
    said = [it for it in found.records() if it[1] is not None or it[2]]
    return (f.fast, f.ts, f.running, f.usage, f.gen, f.queued, said, found.errors)


def test_triage_then_finish_is_the_scan_and_a_cut_triage_finishes_as_the_parts_own() -> None:
    lines = real_and_simulated_lines()
    whole = bs.triage(lines)
    assert whole.fast and whole.prefill and whole.other  # every kind of line is there
    for a, b in [(0, len(lines)), (0, 1), (7, 700), (1000, 4096), (len(lines) - 3, len(lines))]:
        part = lines[a:b]
        assert normal(bs.finish(part, whole.cut(a, b))) == normal(bs.scan(part))


def test_the_prefill_shape_gives_what_the_general_parser_gives() -> None:
    from perftriage.core.parse import logparse as lp

    lines = real_and_simulated_lines()
    tri = bs.triage(lines)
    for i, *_ in tri.prefill:
        assert lp.parse_line(lines[i]) == lp._parse_general(lines[i]) is not None
    items = {i: rec for i, rec, _ in bs.finish(lines, tri).records()}
    for i, ts, use, run, que, inp, new, cached in tri.prefill:
        assert items[i] == lp.parse_line(lines[i])
        assert (items[i].ts, items[i].token_usage, items[i].running, items[i].queued,
                items[i].input_tps, items[i].new_tokens, items[i].cached_tokens) == (
                    ts, use, run, que, inp, new, cached)


async def test_the_helper_process_triages_as_the_app_does() -> None:
    lines = real_and_simulated_lines()
    worker = ScanWorker()
    assert worker.submit(lines[:10]) is None  # not running yet: it starts now
    await wait_for(lambda: worker.running)
    batches = [lines[i:i + 1024] for i in range(0, len(lines), 1024)]
    futures = [worker.submit(b) for b in batches]
    got = [await f for f in futures if f is not None]
    assert len(got) == len(batches) and worker.batches == len(batches)
    assert got == [bs.triage(b) for b in batches]
    proc = worker._proc
    await worker.close()
    assert proc is not None and proc.returncode is not None  # the helper is gone
    assert worker.submit(lines[:10]) is None and not worker.running  # and not started again


async def test_a_helper_that_cannot_start_or_dies_costs_nothing_but_speed() -> None:
    missing = ScanWorker(command=("/nonexistent/python",))
    assert missing.submit(["x"]) is None
    await wait_for(lambda: missing.failed is not None)
    assert "cannot start" in missing.failed and missing.submit(["x"]) is None

    # a helper that answers nothing and exits: the batches sent to it fail,
    # and the pipe parses them in the app, in order
    dying = ScanWorker(command=(sys.executable, "-c", "import sys; sys.stdin.buffer.read(4)"))
    dying.submit(["x"])
    await wait_for(lambda: dying.running)
    emitted: list[list[str]] = []
    pipe = BatchPipe(lambda batch, found: emitted.append(batch), dying)
    sim = real_and_simulated_lines()
    batches = [sim[i:i + 100] for i in range(0, 1000, 100)]
    for b in batches:
        pipe.put(b, flood=True)
    await asyncio.wait_for(pipe.drained(), 10)
    assert emitted == batches and dying.failed is not None
    await dying.close()


async def test_the_pipe_emits_in_order_with_the_helpers_scans_and_closes_without_loss() -> None:
    worker = ScanWorker()
    worker.submit(["warm"])
    await wait_for(lambda: worker.running)
    lines = real_and_simulated_lines()
    seen: list[tuple[list[str], tuple]] = []

    def emit(batch: list[str], found) -> None:  # what the reducer gets: the helper's scan or its own
        seen.append((batch, normal(found if found is not None else bs.scan(batch))))

    pipe = BatchPipe(emit, worker)
    quiet = lines[:3]
    pipe.put(quiet)  # nothing queued: emitted at once, parsed here
    assert seen == [(quiet, normal(bs.scan(quiet)))]
    flood = [lines[i:i + 512] for i in range(3, len(lines), 512)]
    for b in flood:
        pipe.put(b, flood=True)
    pipe.put(["after the flood"])  # queued behind the flood, not ahead of it
    await asyncio.wait_for(pipe.drained(), 20)
    assert [b for b, _ in seen] == [quiet, *flood, ["after the flood"]]
    for batch, found in seen:
        assert found == normal(bs.scan(batch))
    assert worker.batches >= len(flood)

    # stopping mid-flood: what is queued is emitted at once, nothing lost
    seen.clear()
    for b in flood:
        pipe.put(b, flood=True)
    pipe.close_now()
    assert [b for b, _ in seen] == flood
    await worker.close()


async def test_a_followed_flood_goes_through_the_helper_and_replays_to_the_same_state(tmp_path) -> None:
    from perftriage.simulator.sglang_sim import Steady

    sim = Steady(seed=2, error_every=3000)
    path = tmp_path / "flood.log"
    n = 60_000
    path.write_text("".join(f"{sim.line() if i % 3 == 0 else f'request {i}'}\n" for i in range(n)))
    reg = HostRegistry()
    reg.add(local_host())
    session = Session(sessions_dir=tmp_path / "s")
    follower = LogFollower(session, reg)
    worker = follower.scan_worker
    assert worker is not None
    worker.submit(["warm"])  # up before the flood (a slow box may start it after a short one)
    await wait_for(lambda: worker.running, timeout=30)
    sid = follower.open_file("localhost", str(path))
    await wait_for(lambda: session.state.logs[sid].total_lines == n, timeout=60)
    assert worker.batches > 0  # the flood was parsed in the helper
    await follower.close_all()
    session.close()
    live = session.state.logs[sid]
    assert list(live.lines) == path.read_text().splitlines()[-len(live.lines):]
    again = replay(transcript.read(session.path).events).logs[sid]
    for attr in ("gen_tps", "input_tps", "running", "queued", "token_usage"):
        assert list(getattr(again.metrics, attr)) == list(getattr(live.metrics, attr)), attr
    assert again.metrics.last_decode == live.metrics.last_decode
    assert list(again.errors) == list(live.errors) and live.errors
    assert again.total_lines == live.total_lines == n
    assert not any(isinstance(e, ev.LogLines) and not e.lines and not e.dropped
                   for e in transcript.read(session.path).events)


def test_a_busy_servers_batches_are_recorded_in_bulk_as_one_by_one() -> None:
    """Batches holding only common-shape decode and prefill lines (and lines
    that say nothing) take LogMetrics' bulk path; its series, counts and
    latest records are what recording each line in order gives."""
    from perftriage.core.parse.log_metrics import LogMetrics
    from perftriage.simulator.sglang_sim import Steady
    from tests.core.test_logparse import _reference_feed

    sim = Steady(seed=11, error_every=10**9)
    lines = [sim.line() if i % 2 else f"request {i}" for i in range(6000)]
    assert any("Prefill batch" in ln for ln in lines) and any("Decode batch" in ln for ln in lines)
    got = LogMetrics()
    bulk = 0
    pos = 0
    for size in (1, 3, 17, 200, 999, 1024, 2000, 10_000):
        batch = lines[pos:pos + size]
        found = bs.scan(batch)
        bulk += not any(rec is not None or fatal for _, rec, fatal in found.items)
        got.feed(batch, pos + 1, found)
        pos += size
    assert bulk >= 6  # the bulk path, not the per-item one
    ref = _reference_feed(lines[:pos], 1)
    for attr in ("engine", "count", "errors", "last", "last_decode", "last_prefill"):
        assert getattr(got, attr) == getattr(ref, attr), attr
    for attr in ("gen_tps", "input_tps", "running", "queued", "token_usage"):
        assert list(getattr(got, attr)) == list(getattr(ref, attr)), attr


HELPER_OWNER = """
import asyncio, sys
from perftriage.services.flood.scan_worker import ScanWorker

async def main():
    worker = ScanWorker()
    worker.submit(["x"])
    while not worker.running:
        await asyncio.sleep(0.01)
    print(worker._proc.pid, flush=True)
    await asyncio.sleep(60)

asyncio.run(main())
"""


def test_the_helper_does_not_outlive_an_app_killed_with_kill_9() -> None:
    """No orphan: the helper ends at EOF on its stdin, which the kernel
    gives it when its app dies, however it dies."""
    import os
    import signal
    import subprocess
    import time

    app = subprocess.Popen([sys.executable, "-c", HELPER_OWNER], stdout=subprocess.PIPE, text=True)
    try:
        helper = int(app.stdout.readline())
        os.kill(helper, 0)  # it runs
        app.send_signal(signal.SIGKILL)
        app.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(helper, 0)
            except ProcessLookupError:
                break
            try:
                if open(f"/proc/{helper}/stat").read().split()[2] == "Z":
                    break  # exited, waiting for init to reap it
            except FileNotFoundError:
                break  # exited and reaped
            time.sleep(0.05)
        else:
            raise AssertionError("the parse helper outlived its app")
    finally:
        app.kill()


async def test_an_idle_helper_is_stopped_and_the_next_flood_starts_another() -> None:
    worker = ScanWorker(idle_s=0.3)
    worker.submit(["warm"])
    await wait_for(lambda: worker.running)
    first = worker._proc
    lines = real_and_simulated_lines()[:2000]
    fut = worker.submit(lines)
    assert fut is not None and await fut == bs.triage(lines)
    await wait_for(lambda: not worker.running, timeout=5)  # idle: stopped
    assert first is not None
    await wait_for(lambda: first.returncode is not None, timeout=5)
    assert worker.failed is None  # stopped on purpose: not a failure
    assert worker.submit(lines) is None  # no helper now: this batch is parsed in the app
    await wait_for(lambda: worker.running)
    assert worker.started == 2 and worker._proc is not first
    fut = worker.submit(lines)
    assert fut is not None and await fut == bs.triage(lines)
    await worker.close()


async def test_a_timer_flush_during_a_backlog_sends_no_line_twice() -> None:
    """A few lines arm the quiet-moment flush timer; a backlog read right
    after is sent in slices with yields between them, and the timer comes
    due during one of them: every line is still emitted once, in order (an
    earlier drain sent the slices already put a second time)."""
    import time as time_mod
    from types import SimpleNamespace

    from perftriage.services.sources import logs as log_source
    from perftriage.services.sources.logs import CommandLogSource

    emitted: list[str] = []

    def emit_lines(src, lines: list[str], found=None) -> None:
        emitted.extend(lines)
        time_mod.sleep(0.02)  # a slow consumer: the backlog takes longer than FLUSH_S

    owner = SimpleNamespace(session=None, hosts=None, scan_worker=None, emit_lines=emit_lines,
                            source_ended=lambda src, reason: None)
    src = CommandLogSource(owner, "s", "localhost", "x", "file", "")
    first = [f"quiet {i}" for i in range(5)]
    second = [f"quiet again {i}" for i in range(5)]
    backlog = [f"flood {i}" for i in range(6 * log_source.SLICE_LINES)]

    async def batches():
        yield first  # sent at once (nothing sent yet)
        yield second  # just sent: waits for the timer
        yield backlog  # sent in 6 slices, ~0.12 s: the timer comes due meanwhile
        await asyncio.sleep(0.2)

    await asyncio.wait_for(src._pump(batches()), 10)
    assert emitted == first + second + backlog


async def test_a_failure_downstream_reaches_the_source_instead_of_stalling_the_pipe() -> None:
    worker = ScanWorker()
    worker.submit(["warm"])
    await wait_for(lambda: worker.running)
    emitted: list[list[str]] = []

    def emit(batch: list[str], found) -> None:
        if batch[0] == "bad":
            raise RuntimeError("reducer bug")
        emitted.append(batch)

    pipe = BatchPipe(emit, worker)
    pipe.put(["ok 1"], flood=True)
    pipe.put(["bad"], flood=True)
    with pytest.raises(RuntimeError, match="reducer bug"):
        await asyncio.wait_for(pipe.drained(), 10)
    assert emitted == [["ok 1"]]
    await worker.close()


def test_a_batchs_scan_rides_on_its_event_and_never_reaches_the_transcript() -> None:
    from perftriage.core.model import events as ev

    lines = real_and_simulated_lines()[:200]
    found = bs.scan(lines)
    event = ev.LogLines(source_id="s", lines=lines).with_scan(found)
    assert event.scan() is found  # the reducer reuses the live parse
    assert ev.encode(event) == ev.encode(ev.LogLines(source_id="s", lines=lines))
    back = ev.decode(ev.encode(event))  # replayed: parsed when first asked, once
    assert normal(back.scan()) == normal(found) and back.scan() is back.scan()
