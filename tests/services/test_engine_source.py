"""The engine /metrics source: a real HTTP server on 127.0.0.1, reached
directly for localhost and through the loopback sshd's direct-tcpip channel
(the SSH connection's port forward) for a remote host."""

from __future__ import annotations

import asyncio

import pytest

from perftriage.core.model import events as ev
from perftriage.core.model.reducer import apply
from perftriage.core.model.state import SessionState
from perftriage.services.sources.engine_metrics import EngineMetricsSource
from perftriage.transport.local import LocalTransport
from tests.support.helpers import FIXTURES, wait_for
from tests.support.metrics_server import MetricsServer

PAGE_A = (FIXTURES / "metrics" / "sglang-0.5-a.prom").read_text()
PAGE_B = (FIXTURES / "metrics" / "sglang-0.5-b.prom").read_text()


class Recorder:
    """Stands in for Session.emit: stamps t like the session and reduces."""

    def __init__(self) -> None:
        self.events: list[ev.Event] = []
        self.state = SessionState()
        self.t = 0.0

    def __call__(self, event: ev.Event) -> None:
        self.t += 1.0
        event.t = self.t
        self.events.append(event)
        apply(self.state, event)

    def samples(self) -> list[ev.EngineSample]:
        return [e for e in self.events if isinstance(e, ev.EngineSample)]

    def statuses(self) -> list[ev.EngineStatus]:
        return [e for e in self.events if isinstance(e, ev.EngineStatus)]


async def run_source(src: EngineMetricsSource):
    task = asyncio.create_task(src.run())
    src._task = task
    return task


async def test_localhost_scrapes_once_a_second_on_one_connection():
    rec = Recorder()
    with MetricsServer(PAGE_A) as server:
        src = EngineMetricsSource(rec, "localhost", LocalTransport(), server.url, interval=0.2)
        assert src.interval == 1.0  # recorded at most once a second
        await run_source(src)
        try:
            await wait_for(lambda: len(rec.samples()) >= 1, timeout=10)
            server.text = PAGE_B
            await wait_for(lambda: len(rec.samples()) >= 3, timeout=10)
        finally:
            await src.stop()
        assert server.connections == 1 and server.requests >= 3  # keep-alive
        assert server.paths[0] == "/metrics"
        assert server.host_headers[0] == f"127.0.0.1:{server.port}"
    es = rec.state.engines["engine:localhost"]
    assert es.conn_state == "up" and es.latest.engine == "sglang"
    assert es.figures.running == 32.0
    assert es.itl_rows and sum(es.itl_rows[0].counts) == 100  # the a -> b interval
    assert src.state == "stopped"


@pytest.mark.ssh
async def test_through_the_ssh_forward(sshd):
    from perftriage.transport.ssh import SSHTransport

    rec = Recorder()
    transport = SSHTransport("loopback", sshd.alias, ssh_config=sshd.ssh_config)
    server = MetricsServer(PAGE_A).start()
    port = server.port
    src = EngineMetricsSource(rec, "loopback", transport, server.url)
    await run_source(src)
    try:
        await wait_for(lambda: len(rec.samples()) >= 2, timeout=20)
        assert server.connections == 1  # one direct-tcpip channel, kept alive
        server.stop()  # the engine goes away: refused through the channel
        await wait_for(lambda: src.state == "retrying", timeout=20)
        assert "unreachable from loopback" in src.reason
        assert rec.state.engines["engine:loopback"].conn_state == "retrying"
        server = MetricsServer(PAGE_B, port=port).start()  # back, on the same port
        await wait_for(lambda: src.state == "up", timeout=30)
        await wait_for(lambda: rec.samples()[-1].snapshot.gauges.get("running") == 32.0,
                       timeout=20)
    finally:
        await src.stop()
        server.stop()
        await transport.close()
    states = [s.state for s in rec.statuses()]
    assert states[0] == "connecting" and "retrying" in states
    assert rec.state.engines["engine:loopback"].conn_state == "up"


@pytest.mark.parametrize(("body", "status", "said"), [
    ("<html>\x1b]2;pwned\x07</html>", 200, "not Prometheus exposition text"),
    ("nope", 404, "HTTP 404"),
])
async def test_a_wrong_answer_is_retried_with_the_reason(body, status, said):
    rec = Recorder()
    with MetricsServer(body, status=status, content_type="text/html") as server:
        src = EngineMetricsSource(rec, "localhost", LocalTransport(), server.url)
        await run_source(src)
        try:
            await wait_for(lambda: src.state == "retrying", timeout=10)
        finally:
            await src.stop()
    assert said in src.reason
    assert "\x1b" not in src.reason and "\x07" not in src.reason


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/metrics", "127.0.0.1:30000/metrics",
                                 "http://:80/x", "http://127.0.0.1:99999/metrics"])
async def test_a_bad_url_is_down_with_the_reason(url):
    rec = Recorder()
    src = EngineMetricsSource(rec, "localhost", LocalTransport(), url)
    await src.run()  # returns at once
    assert src.state == "down" and "invalid URL" in src.reason
    assert rec.state.engines["engine:localhost"].conn_state == "down"


def test_samples_survive_the_transcript_and_replay_alike():
    from perftriage.core.model.reducer import replay
    from perftriage.core.parse.engine_metrics import parse_exposition

    events = [ev.EngineStatus(source="engine:n1", host="n1", url="http://127.0.0.1:30000/metrics",
                              state="connecting", t=0.5)]
    for t, page in ((1.0, PAGE_A), (2.0, PAGE_B)):
        events.append(ev.EngineSample(source="engine:n1", host="n1",
                                      snapshot=parse_exposition(page), t=t))
    decoded = [ev.decode(ev.encode(e)) for e in events]
    assert decoded == events
    live, replayed = replay(events), replay(decoded)
    a, b = live.engines["engine:n1"], replayed.engines["engine:n1"]
    assert a.figures == b.figures and list(a.itl_rows) == list(b.itl_rows)
    assert b.url == "http://127.0.0.1:30000/metrics" and b.conn_state == "up"
    assert b.ms_per_token == pytest.approx(14.3)


@pytest.mark.parametrize(("toml", "line"), [
    ('[[hosts]]\nname = "a"\nssh = "a"\nmetrics_url = "https://a:1/metrics"\n', 4),
    ('[[servers]]\nname = "s"\ncommand = "x"\n\nmetrics_url = "http://:30000/metrics"\n', 5),
])
def test_a_bad_metrics_url_in_the_config_is_one_line_with_its_line(toml, line):
    from perftriage.core.store.config import ConfigError, parse

    with pytest.raises(ConfigError) as err:
        parse(toml, "c.toml")
    assert str(err.value).startswith(f"c.toml:{line}: ") and "metrics_url" in str(err.value)


@pytest.mark.ssh
async def test_the_ssh_connection_drops_and_comes_back(make_sshd):
    from perftriage.transport.ssh import SSHTransport

    sshd = make_sshd()
    rec = Recorder()
    transport = SSHTransport("loopback", sshd.alias, ssh_config=sshd.ssh_config)
    with MetricsServer(PAGE_B) as server:
        src = EngineMetricsSource(rec, "loopback", transport, server.url)
        await run_source(src)
        try:
            await wait_for(lambda: len(rec.samples()) >= 1, timeout=20)
            sshd.stop()  # the host goes away: the channel and the connection die
            await wait_for(lambda: src.state == "retrying", timeout=30)
            sshd.start()
            before = len(rec.samples())
            await wait_for(lambda: len(rec.samples()) > before, timeout=40)
        finally:
            await src.stop()
            await transport.close()
    assert src.scrapes >= 2 and rec.state.engines["engine:loopback"].conn_state == "up"
