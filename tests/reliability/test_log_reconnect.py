"""Logs survive outages: a followed file reconnects with backoff and
resumes after the last line received, so lines written during the outage
arrive (once); the source says following / reconnecting since T / error /
lost with the reason, recorded in the transcript; tail's errors (missing,
unreadable, a directory) are shown instead of "following · 0 lines"; a
throughput header whose source is not following says it is stale."""

from __future__ import annotations

import os
import shlex
import shutil

import pytest

from tests.support.helpers import wait_for
from tests.support.probe_support import TRANSPORTS, make_host
from tests.support.probe_support import close_probe_hosts  # noqa: F401  (autouse)

from perftriage.core.model import events as ev
from perftriage.core.model.state import LogSourceState
from perftriage.core.store import transcript
from perftriage.core.store.config import HostConfig
from perftriage.core.view.log_status import follow_text, stale_note
from perftriage.services.hosts.registry import Host, HostRegistry
from perftriage.services.logs.follower import LogFollower
from perftriage.services.sources.logs import notice
from perftriage.services.investigation.session import Session
from perftriage.services.sources.base import Source
from perftriage.transport.ssh import SSHTransport
from perftriage.transport.ssh_options import SshOptions

SG = ("[2026-11-28 09:16:06 TP0] Decode batch, #running-req: 1, #token: 852, token usage: 0.00, "
      "cuda graph: True, gen throughput (token/s): 42.0, #queue-req: 0")


def statuses(session: Session, sid: str) -> list[tuple[str, str | None]]:
    return [(e.state, e.reason) for e in session.recorded
            if isinstance(e, ev.LogSourceStatus) and e.source_id == sid]


def follower_on(host: Host, tmp_path) -> tuple[Session, LogFollower]:
    reg = HostRegistry()
    reg.add(host)
    session = Session(hosts=[host.name], sessions_dir=tmp_path / "sessions")
    session.recorded = []  # type: ignore[attr-defined]
    session.subscribe(session.recorded.append)  # type: ignore[attr-defined]
    return session, LogFollower(session, reg)


@pytest.mark.ssh
async def test_outage_reconnects_and_resumes_after_the_last_line(make_sshd, tmp_path):
    server = make_sshd()
    path = tmp_path / "server.log"
    path.write_text("one\ntwo\n")
    cfg = HostConfig(name="gpu1", ssh=server.alias)
    host = Host("gpu1", cfg, SSHTransport.from_config(cfg, SshOptions(config=server.ssh_config)))
    session, follower = follower_on(host, tmp_path)
    sid = follower.open_file("gpu1", str(path))
    src = lambda: session.state.logs[sid]  # noqa: E731
    try:
        await wait_for(lambda: list(src().lines) == ["one", "two"], timeout=30)
        await wait_for(lambda: src().follow == "following")
        server.stop()  # the host goes away: connection and listener
        await wait_for(lambda: src().follow == "reconnecting", timeout=30)
        assert src().follow_reason and src().follow_since is not None
        assert "reconnecting since" in follow_text(src(), session.elapsed)
        with open(path, "a") as fh:  # written while nobody could read it
            fh.write("during-1\nduring-2\n")
        server.start()
        await wait_for(lambda: list(src().lines)[-1:] == ["during-2"], timeout=40)
        await wait_for(lambda: src().follow == "following")
        with open(path, "a") as fh:
            fh.write("after\n")
        await wait_for(lambda: list(src().lines)[-1:] == ["after"], timeout=30)
        assert list(src().lines) == ["one", "two", "during-1", "during-2", "after"]  # once each
        states = [s for s, _ in statuses(session, sid)]
        assert states[:3] == ["following", "reconnecting", "following"]
    finally:
        await follower.close_all()
        await host.transport.close()
        session.close()
    recorded = [e for e in transcript.read(session.path).events if isinstance(e, ev.LogSourceStatus)]
    assert [e.state for e in recorded][:3] == ["following", "reconnecting", "following"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_missing_file_is_an_error_until_it_appears(transport, request, tmp_path):
    host = make_host(transport, request)
    session, follower = follower_on(host, tmp_path)
    path = tmp_path / "later.log"
    sid = follower.open_file(host.name, str(path))
    src = lambda: session.state.logs[sid]  # noqa: E731
    source = follower.sources[sid]
    assert isinstance(source, Source) and source.host == host.name  # the Source protocol
    try:
        await wait_for(lambda: src().follow == "error", timeout=30)
        assert (source.state, "No such file" in (source.reason or "")) == ("retrying", True)
        assert "No such file or directory" in src().follow_reason
        text = follow_text(src(), session.elapsed)
        assert text.startswith("error: cannot open") and "following" not in text
        path.write_text("finally\n")
        await wait_for(lambda: list(src().lines) == ["finally"], timeout=30)
        await wait_for(lambda: src().follow == "following")
        assert not any(ln.startswith("tail: ") for ln in src().lines)  # notices are no lines
    finally:
        await follower.close_all()
        session.close()
    recorded = [e for e in transcript.read(session.path).events if isinstance(e, ev.LogSourceStatus)]
    assert any(e.state == "error" and "No such file" in (e.reason or "") for e in recorded)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_directory_is_lost_with_the_reason(transport, request, tmp_path):
    host = make_host(transport, request)
    session, follower = follower_on(host, tmp_path)
    sid = follower.open_file(host.name, str(tmp_path))
    src = lambda: session.state.logs[sid]  # noqa: E731
    try:
        await wait_for(lambda: not src().open, timeout=30)
        assert src().follow == "lost" and "Is a directory" in (src().follow_reason or "")
        assert "Is a directory" in (src().closed_reason or "")
        assert src().total_lines == 0
    finally:
        await follower.close_all()
        session.close()


def follow_unprivileged(host: Host) -> None:
    """Root reads every file (CI runs as root): there the follow command runs
    as nobody (``setpriv``), so the file is unreadable to the real ``tail``
    that follows it; everything else of the follower and transport is as it is."""
    if os.geteuid() != 0:
        return
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("running as root needs setpriv (util-linux) to drop privileges for this case")
    stream = host.transport.stream_batches

    def as_nobody(command: str, **kwargs):  # the transport's keywords (label=) as they are
        return stream(f"{setpriv} --reuid=65534 --regid=65534 --clear-groups "
                      f"sh -c {shlex.quote(command)}", **kwargs)

    host.transport.stream_batches = as_nobody  # type: ignore[method-assign]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_unreadable_file_is_an_error(transport, request, tmp_path):
    host = make_host(transport, request)
    follow_unprivileged(host)
    session, follower = follower_on(host, tmp_path)
    path = tmp_path / "secret.log"
    path.write_text("x\n")
    path.chmod(0)
    sid = follower.open_file(host.name, str(path))
    try:
        await wait_for(lambda: session.state.logs[sid].follow == "error", timeout=30)
        assert "Permission denied" in session.state.logs[sid].follow_reason
    finally:
        await follower.close_all()
        session.close()


def test_tail_notices_are_recognised_and_log_lines_are_not():
    assert notice("tail: cannot open 'x' for reading: Permission denied")[0] == "error"
    assert notice("tail: 'x' has become inaccessible: No such file or directory")[0] == "error"
    assert notice("tail: 'x' has been replaced;  following new file")[0] == "restart"
    assert notice("tail: x: file truncated")[0] == "restart"
    assert notice("tail: error reading 'd': Is a directory")[0] == "lost"
    assert notice("tail: no files remaining")[0] == "lost"
    assert notice("INFO tail: cannot open 'x' for reading: nope") is None
    assert notice("tail: my own log line") is None


def test_a_header_whose_source_is_not_following_says_it_is_stale():
    src = LogSourceState("s", "h", "/p")
    src.metrics_t = 100.0
    assert stale_note(src, 130.0) is None
    src.follow, src.follow_reason, src.follow_since = "reconnecting", "connection lost", 110.0
    assert stale_note(src, 130.0) == "stale (reconnecting; last metric 30s ago)"
    assert follow_text(src, 130.0) == "reconnecting since 20s ago: connection lost"  # no wall: replayed
    src.follow_since_wall = 1_800_000_000.0
    assert follow_text(src, 130.0).startswith("reconnecting since ") and "(20s ago): connection" in follow_text(src, 130.0)
    src.open, src.closed_reason = False, "lost: Is a directory"
    assert stale_note(src, 400.0) == "stale (closed; last metric 5m ago)"
    src.metrics_t = None
    assert stale_note(src, 400.0) is None  # nothing to mistake for live figures


async def test_the_logs_pane_shows_the_state_and_a_stale_header(tmp_path):
    from perftriage.ui.app import PerftriageApp
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts.registry import local_host
    from perftriage.ui.widgets.logs import LogsPane

    reg = HostRegistry()
    reg.add(local_host())
    cockpit = Cockpit(registry=reg, sessions_dir=tmp_path, sample_interval=30)
    s = cockpit.session
    s.emit(ev.LogSourceOpened(source_id="log1", host="gpu1", path="/var/log/sglang.log"))
    s.emit(ev.LogLines(source_id="log1", lines=["start", SG]))
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 50)) as pilot:
        pane = app.screen.query_one(LogsPane)

        def text(widget_id: str) -> str:
            return str(pane.query_one(widget_id).render())

        await wait_for(lambda: "42.0" in text("#logs-metrics"))
        assert "stale" not in text("#logs-metrics")
        s.emit(ev.LogSourceStatus(source_id="log1", state="reconnecting",
                                  reason="connection to gpu1 lost"))
        await wait_for(lambda: "stale (reconnecting" in text("#logs-metrics"))
        await wait_for(lambda: "reconnecting since" in text("#logs-status"))
        assert "connection to gpu1 lost" in text("#logs-status")
        pane.select("log1")
        await pilot.pause()
        await wait_for(lambda: text("#logs-status").startswith("reconnecting since"))
        assert "following" not in text("#logs-status")  # not the view's scroll mode either
        s.emit(ev.LogSourceStatus(source_id="log1", state="following"))
        await wait_for(lambda: "stale" not in text("#logs-metrics"))
        await wait_for(lambda: "reconnecting" not in text("#logs-status"))
