"""Issue 31 item 7: a continued investigation reads a followed log on from
where its earlier run stopped, never again from line 1 (seen on an H200:
the second run of ``-s h200-moe`` read the server log's 1,305 lines again
and the report counted them twice).

The real cockpit, twice on one investigation, over the local transport and
over the loopback sshd, following the log its host's config names (the
case that failed: the configured log was opened afresh before the earlier
run's record was continued) -- the SGLang 0.5.23 log fixture
(``tests/fixtures/logs/sglang-0.5.23-tp8.log``). Between the runs the server
writes on, or the log is rotated (renamed, a new file: longer than what was
read, so only its inode tells), or truncated in place (copytruncate: same
inode, fewer bytes): reading goes on at the next line only for the same
file unshrunk; otherwise a note says rotated / truncated and where reading
restarts. A file replaced while followed (tail's notice) is read from its
line 1 by a new start, once. And a report of a transcript recorded before
the fix (the same file read again under a second source) counts no line
twice.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from perftriage.core.compare.load import load
from perftriage.core.model import events as ev
from perftriage.core.report.from_file import render_file
from perftriage.core.store import config as config_mod
from perftriage.core.store import transcript
from perftriage.services.cockpit import Cockpit
from perftriage.services.sources import logs as log_sources
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.investigation.named import open_investigation
from tests.support.helpers import wait_for
from tests.support.probe_support import TRANSPORTS, make_host
from tests.support.probe_support import close_probe_hosts  # noqa: F401  (autouse)

FIXTURE = Path(__file__).parents[1] / "fixtures" / "logs" / "sglang-0.5.23-tp8.log"
LINES = FIXTURE.read_text().splitlines()
DECODE = [ln for ln in LINES if "Decode batch" in ln]
MORE = [f"[2026-11-28 09:20:0{i} TP0] Decode batch, #running-req: 1, #token: 900, token usage: "
        f"0.01, cuda graph: True, gen throughput (token/s): 10{i}.00, #queue-req: 0"
        for i in range(4)]


def _write(path: Path, lines: list[str], mode: str = "w") -> None:
    with open(path, mode) as fh:
        fh.write("".join(f"{ln}\n" for ln in lines))


async def _run(kind: str, request, tmp_path: Path, log: Path, file_lines: int,
               between: Callable[[], None] | None = None) -> Cockpit:
    """One run of investigation 'h200-moe' whose host follows ``log`` (its
    config's ``logs``); returns when the file's ``file_lines`` lines are read
    (``between``: run once the file's first lines are read, then a size
    recorded after the last line)."""
    host = make_host(kind, request, logs=[str(log)])
    reg = HostRegistry()
    reg.add(host)
    session = open_investigation("h200-moe", tmp_path / "sessions", reg.names, defer_logs=True)
    cockpit = Cockpit(config_mod.Config(), registry=reg, session=session, sample_interval=1.0)
    await cockpit.start()
    try:
        def read(n: int) -> bool:
            return any(s.path == str(log) and s.file_line == n and s.open
                       for s in cockpit.session.state.logs.values())
        if between is not None:
            await wait_for(lambda: any(s.path == str(log) and s.file_line
                                       for s in cockpit.session.state.logs.values()), timeout=60)
            between()
            await wait_for(lambda: read(file_lines) and any(
                s.file_size == log.stat().st_size for s in cockpit.session.state.logs.values()),
                timeout=60)
        await wait_for(lambda: read(file_lines), timeout=60)
    finally:
        await cockpit.stop()
    return cockpit


def _throughput_rows(report: str) -> list[str]:
    """The report's throughput rows, up to their decode-line count."""
    return [ln.split(";")[0] for ln in report.splitlines()
            if ln.startswith("- ") and " decode lines;" in ln]


def _recorded(path: Path, log: Path) -> tuple[set[str], list[str], list[ev.Event]]:
    """(source ids of ``log``, its lines in transcript order, position events and notes)."""
    events = transcript.read(path).events
    sids = {e.source_id for e in events if isinstance(e, ev.LogSourceOpened) and e.path == str(log)}
    lines = [ln for e in events if isinstance(e, ev.LogLines) and e.source_id in sids
             for ln in e.lines]
    said = [e for e in events if isinstance(e, (ev.LogFilePosition, ev.NoteAdded))]
    return sids, lines, said


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_the_next_run_reads_on_after_the_last_line_and_the_report_counts_once(
        kind, request, tmp_path):
    log = tmp_path / "server.log"
    _write(log, LINES)
    first = await _run(kind, request, tmp_path, log, len(LINES))
    _write(log, MORE, "a")  # the server wrote on between the runs
    second = await _run(kind, request, tmp_path, log, len(LINES) + len(MORE))
    assert second.session.path == first.session.path
    sids, lines, said = _recorded(second.session.path, log)
    assert len(sids) == 1 and lines == LINES + MORE  # every line once, in order
    positions = [e for e in said if isinstance(e, ev.LogFilePosition)]
    assert [p.line for p in positions] == [0, len(LINES)]
    assert positions[1].ino == os.stat(log).st_ino and positions[1].restarted is None
    assert _throughput_rows(render_file(second.session.path)) == [
        f"- {second.registry.names[0]}:{log}: {len(DECODE) + len(MORE)} decode lines"]


def _rotate(log: Path) -> tuple[list[str], str]:
    """Renamed away, a new file in its place, longer than what was read (only
    its inode tells): (its lines, what the note must say)."""
    old_ino = log.stat().st_ino
    os.rename(log, log.with_name("server.log.1"))
    rotated = MORE * 10
    _write(log, rotated)
    return rotated, f"rotated (another file now: inode {old_ino} → {log.stat().st_ino})"


def _truncate(log: Path) -> tuple[list[str], str]:
    """copytruncate: the same inode, fewer bytes."""
    before, ino = log.stat().st_size, log.stat().st_ino
    _write(log, MORE)
    assert log.stat().st_ino == ino
    return MORE, f"truncated ({before:,} → {log.stat().st_size:,} bytes)"


@pytest.mark.parametrize("kind", TRANSPORTS)
@pytest.mark.parametrize("change", [_rotate, _truncate], ids=["rotated", "truncated"])
async def test_a_log_rotated_or_truncated_between_runs_is_read_from_its_line_1_and_said(
        kind, change, request, tmp_path):
    log = tmp_path / "server.log"
    _write(log, LINES)
    await _run(kind, request, tmp_path, log, len(LINES))
    new_lines, why = change(log)
    second = await _run(kind, request, tmp_path, log, len(new_lines))
    sids, lines, said = _recorded(second.session.path, log)
    assert len(sids) == 1 and lines == LINES + new_lines  # nothing lost, nothing twice
    restarts = f"{why} since line {len(LINES)} was read: reading restarts at its line 1"
    assert [e.text for e in said if isinstance(e, ev.NoteAdded)] == [
        f"log {second.registry.names[0]}:{log} was {restarts}"]
    last = [e for e in said if isinstance(e, ev.LogFilePosition)][-1]
    assert (last.line, last.restarted) == (0, restarts)


async def test_a_copytruncate_that_regrows_past_the_first_size_is_still_seen(
        monkeypatch, request, tmp_path):
    """The size is recorded again while lines arrive: a file truncated between
    the runs and grown back past its size at the start of following (a busy
    server's night after logrotate's copytruncate) is still a truncation."""
    monkeypatch.setattr(log_sources, "CHECKPOINT_S", 0.2)
    log = tmp_path / "server.log"
    _write(log, LINES)
    first_size = log.stat().st_size

    def grow() -> None:
        _write(log, MORE * 20, "a")

    await _run("local", request, tmp_path, log, len(LINES) + len(MORE) * 20, between=grow)
    grown = log.stat().st_size
    _write(log, MORE * 12)  # truncated in place, then more than the first size written
    assert first_size < log.stat().st_size < grown
    second = await _run("local", request, tmp_path, log, len(MORE) * 12)
    _, lines, said = _recorded(second.session.path, log)
    assert lines == LINES + MORE * 20 + MORE * 12
    sizes = [e.size for e in said if isinstance(e, ev.LogFilePosition) and e.line is None]
    assert sizes and sizes[-1] == grown
    assert [e.text for e in said if isinstance(e, ev.NoteAdded)] == [
        f"log localhost:{log} was truncated ({grown:,} → {log.stat().st_size:,} bytes) since "
        f"line {len(LINES) + len(MORE) * 20} was read: reading restarts at its line 1"]


@pytest.mark.parametrize("kind", TRANSPORTS)
async def test_a_log_replaced_while_followed_is_read_from_its_line_1_once(
        kind, request, tmp_path):
    from tests.reliability.test_log_reconnect import follower_on

    log = tmp_path / "server.log"
    _write(log, LINES)
    host = make_host(kind, request)
    session, follower = follower_on(host, tmp_path)
    sid = follower.open_file(host.name, str(log))
    src = lambda: session.state.logs[sid]  # noqa: E731
    try:
        await wait_for(lambda: src().file_line == len(LINES), timeout=30)
        os.rename(log, tmp_path / "server.log.1")
        _write(log, MORE)
        await wait_for(lambda: src().file_line == len(MORE), timeout=30)
        _write(log, MORE[:1], "a")
        await wait_for(lambda: src().file_line == len(MORE) + 1, timeout=30)
    finally:
        await follower.close_all()
    assert src().total_lines == len(LINES) + len(MORE) + 1  # each line once
    positions = [e for e in session.recorded if isinstance(e, ev.LogFilePosition)]
    assert [p.line for p in positions] == [0, 0]
    # (renamed then created: tail says "has appeared" or "has been replaced")
    assert "following new file: reading restarts at its line 1" in (positions[1].restarted or "")
    assert positions[1].ino == log.stat().st_ino != positions[0].ino


def test_a_report_of_a_log_read_twice_before_the_fix_counts_each_line_once(tmp_path):
    """The shape of the H200 recording: run 1 reads the log (source log-1),
    run 2 opens it afresh (log-2) and reads it again from line 1, then on."""
    log = "/var/log/sglang.log"
    s = open_investigation("h200-moe", tmp_path, ["gpu1"])
    s.emit(ev.LogSourceOpened(source_id="log-1", host="gpu1", path=log))
    s.emit(ev.LogLines(source_id="log-1", lines=LINES))
    s.close()
    s = open_investigation("h200-moe", tmp_path, ["gpu1"])
    s.emit(ev.LogSourceOpened(source_id="log-2", host="gpu1", path=log))
    s.emit(ev.LogLines(source_id="log-2", lines=LINES[:10]))
    s.emit(ev.LogLines(source_id="log-2", lines=LINES[10:] + MORE))
    s.close()
    report = render_file(s.path)
    assert _throughput_rows(report) == [f"- gpu1:{log}: {len(DECODE) + len(MORE)} decode lines"]
    ready = [ln for ln in report.splitlines() if "fired up" in ln]
    assert len(ready) == 1 and "×" not in ready[0]  # the ready line once, not twice
    # the before/after pass of the report reads the log's throughput once too
    rec = load(s.path)
    rec.flush()
    assert len(rec.series[("decode_tps", "gpu1", -1)].v) == len(DECODE) + len(MORE)
