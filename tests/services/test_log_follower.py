"""Log follower: truncation, rotation, no orphan tail, transcript cap."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support.helpers import wait_for
from perftriage.core.model import events as ev
from perftriage.core.store import transcript
from perftriage.core.store.config import HostConfig
from perftriage.services.hosts.registry import Host, HostRegistry, local_host
from perftriage.services.logs.follower import LogFollower, strip_heartbeats
from perftriage.services.investigation.session import Session
from perftriage.transport.ssh import SSHTransport
from perftriage.transport.ssh_options import SshOptions


def tails_of(path) -> list[str]:
    out = subprocess.run(["ps", "-ewwo", "pid,args"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if "tail -n" in ln and str(path) in ln]


def registry() -> HostRegistry:
    reg = HostRegistry()
    reg.add(local_host())
    return reg


async def follow_across(follower: LogFollower, session: Session, path, tmp_path) -> None:
    sid = follower.open_file("localhost", str(path))
    src = lambda: session.state.logs[sid]  # noqa: E731
    await wait_for(lambda: list(src().lines) == ["one", "two"])
    with open(path, "a") as fh:
        fh.write("three\n")
    await wait_for(lambda: list(src().lines)[-1:] == ["three"])
    # truncation: the file shrinks and starts again (tail -F notices a shrink;
    # a rewrite that is already longer than the old offset looks like growth)
    with open(path, "w") as fh:
        fh.write("t1\n")
    await wait_for(lambda: "t1" in src().lines)
    # rotation: the file is renamed away and a new one appears under the name
    os.rename(path, tmp_path / "app.log.1")
    with open(path, "w") as fh:
        fh.write("rotated-1\nrotated-2\n")
    await wait_for(lambda: list(src().lines)[-2:] == ["rotated-1", "rotated-2"])
    assert "\x1e" not in "".join(src().lines)
    assert tails_of(path)
    await follower.close(sid)
    assert not session.state.logs[sid].open
    await wait_for(lambda: not tails_of(path), timeout=5)


async def test_follow_local_truncation_and_rotation(tmp_path) -> None:
    path = tmp_path / "app.log"
    path.write_text("one\ntwo\n")
    session = Session(sessions_dir=tmp_path / "s")
    follower = LogFollower(session, registry())
    await follow_across(follower, session, path, tmp_path)
    session.close()


@pytest.mark.ssh
async def test_follow_over_ssh_and_no_orphan(sshd, tmp_path) -> None:
    path = tmp_path / "remote.log"
    path.write_text("one\ntwo\n")
    cfg = HostConfig(name="r", ssh=sshd.alias)
    transport = SSHTransport.from_config(cfg, SshOptions(config=sshd.ssh_config))
    reg = HostRegistry()
    reg.add(Host("r", cfg, transport))
    session = Session()
    follower = LogFollower(session, reg)
    sid = follower.open_file("r", str(path))
    await wait_for(lambda: list(session.state.logs[sid].lines) == ["one", "two"])
    with open(path, "w") as fh:
        fh.write("t\n")
    await wait_for(lambda: "t" in session.state.logs[sid].lines)
    os.rename(path, tmp_path / "remote.log.1")
    path.write_text("rotated\n")
    await wait_for(lambda: "rotated" in session.state.logs[sid].lines)
    assert tails_of(path)
    await follower.close(sid)
    await transport.close()
    await wait_for(lambda: not tails_of(path), timeout=6)


def test_strip_heartbeats() -> None:
    assert strip_heartbeats(["\x1e\x1eabc", "\x1e", "", "d\x1eef"]) == ["abc", "", "def"]


def test_a_split_batch_is_tested_whole_on_its_text_and_never_misses_a_line() -> None:
    from perftriage.transport.base import MAX_LINE_CHARS, LineSplitter, Lines, batch_holds

    split = LineSplitter()
    first = split.feed("a\x1e\ntail: x has been replaced; following new file\npart")
    assert isinstance(first, Lines) and first == ["a\x1e", "tail: x has been replaced; following new file"]
    assert batch_holds(first, "\x1e") and batch_holds(first, "tail: ")
    second = split.feed("ial\x1e\nplain\n")  # the heartbeat is in the line the last chunk began
    assert second == ["partial\x1e", "plain"] and batch_holds(second, "\x1e")
    assert not batch_holds(split.feed("quiet\nlines\n"), "\x1e")
    # text may say "maybe" (a partial line it holds), a plain list is exact
    assert split.feed("done\nhalf\x1e") == ["done"] and batch_holds(split.feed("\n"), "\x1e")
    assert batch_holds(["x", "y\x1e"], "\x1e") and not batch_holds(["x", "y"], "\x1e")
    # an overlong line is cut: that batch is a plain list, tested line by line
    cut = LineSplitter().feed("x" * (MAX_LINE_CHARS + 5) + "\x1e\nshort\n")
    assert not isinstance(cut, Lines) and not batch_holds(cut, "\x1e")


async def test_transcript_cap_keeps_metric_lines(tmp_path) -> None:
    session = Session(sessions_dir=tmp_path)
    follower = LogFollower(session, registry(), transcript_cap=5)
    decode = ("[2026-11-28 09:16:06 TP0] Decode batch, #running-req: 1, #token: 852, token usage: "
              "0.00, cuda graph: True, gen throughput (token/s): 10.31, #queue-req: 0")
    lines = [f"line {i}" for i in range(8)] + [decode] + ["tail"]
    from perftriage.services.sources.logs import CommandLogSource

    session.emit(ev.LogSourceOpened(source_id="s", host="localhost", path="x"))
    src = CommandLogSource(follower, "s", "localhost", "x", "file", "")
    follower.emit_lines(src, lines)
    follower.emit_lines(src, ["more"])
    live = session.state.logs["s"]
    assert live.total_lines == 11 and list(live.metrics.gen_tps) == [10.31]
    session.close()
    tr = transcript.read(session.path)
    recorded = [e for e in tr.events if isinstance(e, ev.LogLines)]
    assert recorded[0].lines == lines[:5] + [decode] and recorded[0].dropped == 4
    assert recorded[1].lines == [] and recorded[1].dropped == 1
    notes = [e for e in tr.events if isinstance(e, ev.NoteAdded)]
    assert len(notes) == 1 and "cap" in notes[0].text
    from perftriage.core.model.reducer import replay

    replayed = replay(tr.events)
    assert list(replayed.logs["s"].metrics.gen_tps) == [10.31]
    assert replayed.logs["s"].dropped == 5


async def test_a_followed_log_is_one_of_the_cockpits_sources_and_stops_with_it(tmp_path) -> None:
    from perftriage.services.cockpit import Cockpit

    path = tmp_path / "app.log"
    path.write_text("one\n")
    cockpit = Cockpit(registry=registry(), sessions_dir=tmp_path / "s")
    sid = cockpit.logs.open_file("localhost", str(path))
    source = cockpit.sources.get(f"log:{sid}")
    assert source is not None and source is cockpit.logs.sources[sid]
    assert source.host == "localhost"
    await wait_for(lambda: list(cockpit.session.state.logs[sid].lines) == ["one"])
    assert source.state == "up"
    # a command's output that ends by itself leaves the list (nothing to stop)
    done = cockpit.logs.open_command("localhost", "echo done", path="done")
    await wait_for(lambda: not cockpit.session.state.logs[done].open)
    assert cockpit.sources.get(f"log:{done}") is None
    assert [s.name for s in cockpit.sources] == [f"log:{sid}"]
    await cockpit.stop("quit")
    assert source.state == "stopped" and len(cockpit.sources) == 0
    assert cockpit.session.state.logs[sid].closed_reason == "quit"
    await wait_for(lambda: not tails_of(path), timeout=5)


@pytest.mark.parametrize("how", ["file", "command"])
async def test_a_follow_that_hits_a_bug_says_it_failed_not_ended(tmp_path, how) -> None:
    """An exception nobody planned for (here a TypeError from the emit, as a
    parser bug would raise) stops the follow with "failed: TypeError: …" in
    the source's state and the transcript, not the "ended" of a log that
    ended by itself."""
    path = tmp_path / "app.log"
    path.write_text("one\ntwo\n")
    session = Session(sessions_dir=tmp_path / "s")
    follower = LogFollower(session, registry())

    def broken(src, lines, found=None) -> None:
        raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")

    follower.emit_lines = broken  # type: ignore[method-assign]
    if how == "file":
        sid = follower.open_file("localhost", str(path))
    else:
        sid = follower.open_command("localhost", f"cat {path}", path=str(path))
    src = lambda: session.state.logs[sid]  # noqa: E731
    await wait_for(lambda: not src().open, timeout=20)
    why = "failed: TypeError: unsupported operand type(s) for +: 'int' and 'str'"
    assert src().closed_reason is not None and src().closed_reason.startswith(why)
    if how == "file":
        assert src().follow == "error" and src().follow_reason.startswith(why)
    session.close()
    closed = [e for e in transcript.read(session.path).events if isinstance(e, ev.LogSourceClosed)]
    assert [e.reason.startswith(why) for e in closed] == [True]
