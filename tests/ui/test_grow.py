"""Growing a running cockpit: a host over real SSH joins and leaves, a log is
followed, an engine /metrics (a real HTTP server) is scraped, a Prometheus
URL is set — all recorded as events, started again when the investigation is
continued, and saved into the config file (comments kept) when asked."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from perftriage.transport.ssh_options import SshOptions
from tests.support.helpers import wait_for
from tests.support.metrics_server import MetricsServer
from perftriage.core.model import events as ev
from perftriage.core.store import config as config_mod
from perftriage.core.store import transcript
from perftriage.services.sources.base import JoinError
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry, local_host
from perftriage.services.investigation.named import open_investigation

FIXTURES = Path(__file__).parents[1] / "fixtures"
PAGE = (FIXTURES / "metrics" / "sglang-0.5-a.prom").read_text()
DECODE = ("[2026-11-28 10:00:0{i} TP0] Decode batch, #running-req: 8, #token: 900, token usage: "
          "0.10, cuda graph: True, gen throughput (token/s): 41{i}.00, #queue-req: 0\n")


def _cockpit(tmp_path, name="grow", config=None) -> Cockpit:
    reg = HostRegistry()
    reg.add(local_host())
    session = open_investigation(name, tmp_path / "sessions", reg.names)
    return Cockpit(config or config_mod.Config(), registry=reg, session=session,
                   sample_interval=0.2)


def _added(path) -> list[tuple[str, str]]:
    return [(e.what, e.value) for e in transcript.read(path).events
            if isinstance(e, ev.CockpitAdded)]


async def test_a_log_and_an_engine_join_and_come_back_in_the_next_run(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(DECODE.format(i=1))
    with MetricsServer(PAGE) as server:
        cockpit = _cockpit(tmp_path)
        await cockpit.start()
        try:
            sid = cockpit.follow_log("localhost", str(log))
            name = cockpit.add_engine(server.url, "localhost")
            state = cockpit.session.state
            await wait_for(lambda: state.logs[sid].total_lines == 1, timeout=20)
            await wait_for(lambda: state.engines.get(name) is not None
                           and state.engines[name].conn_state == "up", timeout=20)
            with pytest.raises(JoinError, match="http"):
                cockpit.add_engine("ftp://x/metrics")
            with pytest.raises(JoinError, match="no host 'nowhere'"):
                cockpit.follow_log("nowhere", "/var/log/x")
        finally:
            await cockpit.stop()
        path = cockpit.session.path
        assert ("engine", server.url) in _added(path)

        # the next run: what only the recording names waits for O (
        # a recording may be crafted); then the log is followed again under
        # its id, from the line after the last one read (what the server
        # wrote meanwhile included, nothing twice), and the engine is
        # scraped again, with no configuration
        with open(log, "a") as fh:
            fh.write(DECODE.format(i=2))
        cockpit = _cockpit(tmp_path)
        requests_before = server.requests
        await cockpit.start()
        try:
            state = cockpit.session.state
            assert state.logs[sid].total_lines == 1  # restored from the transcript
            assert {(r.what, r.value) for r in cockpit.recorded_only} == {
                ("log", str(log)), ("engine", server.url)}
            assert cockpit.logs.sources == {}
            assert await cockpit.reopen_recorded() == [
                f"re-opened: engine {server.url} on localhost", f"re-opened: log localhost:{log}"]
            await wait_for(lambda: state.logs[sid].open, timeout=20)
            await wait_for(lambda: server.requests > requests_before, timeout=20)
            with open(log, "a") as fh:
                fh.write(DECODE.format(i=3))
            await wait_for(lambda: state.logs[sid].total_lines == 3, timeout=20)
            assert [ln[12:20] for ln in state.logs[sid].lines] == [
                "10:00:01", "10:00:02", "10:00:03"]
        finally:
            await cockpit.stop()


@pytest.mark.ssh
async def test_a_host_joins_over_ssh_and_leaves(quiet_sshd, tmp_path):
    cockpit = _cockpit(tmp_path, "hosts")
    cockpit.registry.ssh = SshOptions(config=quiet_sshd.ssh_config)  # as --ssh-config gives it
    await cockpit.start()
    try:
        assert cockpit.add_hosts(quiet_sshd.alias) == [quiet_sshd.alias]
        assert cockpit.add_hosts(quiet_sshd.alias) == []  # there already
        state = cockpit.session.state
        await wait_for(lambda: state.hosts[quiet_sshd.alias].conn_state == "up", timeout=30)
        pid = cockpit.probes.enqueue(quiet_sshd.alias, "shell", ["echo joined"])
        await cockpit.probes.wait(pid)
        assert state.probes[pid].stdout == "joined\n"
        with pytest.raises(JoinError):
            cockpit.add_hosts("bad host;rm -rf ~")
        await cockpit.remove_host(quiet_sshd.alias)
        assert quiet_sshd.alias not in cockpit.registry.hosts
        assert quiet_sshd.alias not in state.hosts
        assert not [s for s in cockpit.sources if s.host == quiet_sshd.alias]
    finally:
        await cockpit.stop()
    events = transcript.read(cockpit.session.path).events
    assert [(type(e).__name__, e.value) for e in events
            if isinstance(e, (ev.CockpitAdded, ev.CockpitRemoved))] == [
        ("CockpitAdded", quiet_sshd.alias), ("CockpitRemoved", quiet_sshd.alias)]


def test_a_bad_pack_says_where(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[hypotheses]]\ntitle = "t"\ncheck = "gap.trafic_ratio > 1"\n')
    cockpit = _cockpit(tmp_path, "packs")
    with pytest.raises(JoinError, match=r"bad.toml:3.*gap.traffic_ratio"):
        cockpit.load_pack(str(bad))
    assert cockpit.session.state.hypotheses == []
    cockpit.session.close()


def test_the_bundled_pack_adds_its_hypotheses_once_and_is_recorded(tmp_path):
    from perftriage.core.checks import pack

    cockpit = _cockpit(tmp_path, "packs")
    titles = [h.title for h in pack.load("seed")]
    assert cockpit.load_pack("seed") == len(titles) > 0
    assert [h.title for h in cockpit.session.state.hypotheses] == titles
    assert any(h.check for h in cockpit.session.state.hypotheses)
    assert cockpit.load_pack("seed") == 0  # loaded again: nothing twice
    assert [(a.what, a.value) for a in cockpit.session.state.additions] == [
        ("pack", "seed")]  # one addition, however often loaded
    cockpit.session.close()


CONFIG = """\
# my lab (this comment stays)
[ui]
theme = "nord"  # and this one

[[hosts]]
name = "gpu-a"
ssh = "admin@10.0.0.5"
logs = ["/var/log/a.log"]
"""


def test_what_joined_is_saved_into_the_config_keeping_comments(tmp_path):
    config_file = tmp_path / "config.toml"
    config_file.write_text(CONFIG)
    config = config_mod.load(config_file)
    cockpit = _cockpit(tmp_path, "save", config=config)
    session = cockpit.session
    # what the cockpit records when things join (the sources need no start here)
    session.emit(ev.CockpitAdded(what="engine", value="http://127.0.0.1:30000/metrics",
                                 host="localhost"))
    session.emit(ev.CockpitAdded(what="prometheus", value="http://127.0.0.1:9090"))
    session.emit(ev.LogSourceOpened(source_id="log9", host="localhost", path="/tmp/s.log"))
    session.emit(ev.LogSourceOpened(source_id="log10", host="gpu-a", path="/var/log/a.log"))
    changes = cockpit.save_to_config(config_file)
    assert changes == ["host localhost", "log localhost:/tmp/s.log",
                       "engine http://127.0.0.1:30000/metrics on localhost",
                       "prometheus http://127.0.0.1:9090"]
    text = config_file.read_text()
    assert text.startswith(CONFIG.rstrip("\n").split("\n[[hosts]]")[0])
    assert "# my lab (this comment stays)" in text and "# and this one" in text
    saved = config_mod.load(config_file)  # valid for the strict validator
    local = saved.host("localhost")
    assert local is not None and local.logs == ["/tmp/s.log"]
    assert local.metrics_url == "http://127.0.0.1:30000/metrics"
    assert saved.fleet.prometheus == "http://127.0.0.1:9090"
    assert saved.host("gpu-a").logs == ["/var/log/a.log"]  # configured: not added twice
    assert cockpit.save_to_config(config_file) == []  # nothing new to offer
    session.close()


def test_a_broken_config_is_not_overwritten(tmp_path):
    config_file = tmp_path / "config.toml"
    config_file.write_text("[ui\nbroken")
    cockpit = _cockpit(tmp_path, "broken")
    cockpit.session.emit(ev.CockpitAdded(what="prometheus", value="http://127.0.0.1:9090"))
    with pytest.raises(JoinError, match="config not saved"):
        cockpit.save_to_config(config_file)
    assert config_file.read_text() == "[ui\nbroken"
    cockpit.session.close()


async def test_keys_and_palette_grow_the_running_app(tmp_path):
    """U asks for an engine URL, C saves it into --config; the palette lists
    the same commands and one "host: remove NAME" per host."""
    from perftriage.ui.app import PerftriageApp
    from perftriage.ui.palette import GrowCommands
    from tests.ui.test_logs_pane import type_text

    config_file = tmp_path / "config.toml"
    config_file.write_text("# mine\n")
    with MetricsServer(PAGE) as server:
        cockpit = _cockpit(tmp_path, "ui")
        app = PerftriageApp(cockpit, config_path=config_file)
        async with app.run_test(size=(140, 45)) as pilot:
            await pilot.pause()
            await pilot.press("U")
            await wait_for(lambda: type(app.screen).__name__ == "PromptScreen")
            await type_text(pilot, server.url)
            await pilot.press("enter")
            state = cockpit.session.state
            await wait_for(lambda: [a.value for a in state.additions] == [server.url])
            await wait_for(lambda: state.engines.get("engine:localhost") is not None
                           and state.engines["engine:localhost"].conn_state == "up", timeout=20)
            texts = [t for t, _, _ in GrowCommands(app.screen).entries()]
            assert {"host: add", "engine: add /metrics URL", "fleet: set Prometheus URL",
                    "hypothesis: load a pack", "config: save what joined",
                    "log: follow a file", "host: remove localhost"} <= set(texts)
            await pilot.press("C")
            await wait_for(lambda: "metrics_url" in config_file.read_text())
            assert config_file.read_text().startswith("# mine\n")
            await pilot.press("q")


def test_a_source_that_joins_is_found_through_its_kind_never_named(tmp_path, monkeypatch):
    """The cockpit joins (and a continued run joins again) whatever kind in
    SOURCE_KINDS answers the recorded word: no if/elif names a source."""
    from perftriage.services.sources import factories
    from perftriage.services.sources.base import BaseSource, Joined, SourceKind

    made: list[tuple[str, str | None]] = []

    def join(j) -> Joined:
        made.append((j.value, j.host))
        source = BaseSource()
        source.name, source.host = f"stand-in:{j.value}", j.host
        return Joined(source, j.value.strip().upper())

    kind = SourceKind("stand-in", lambda config, registry, session: [], joins="engine",
                      join=join)
    monkeypatch.setattr(factories, "SOURCE_KINDS", (kind,))
    cockpit = _cockpit(tmp_path)
    joined = cockpit.join("engine", " x ", "localhost")
    assert joined.value == "X" and joined.source is not None
    assert [(a.what, a.value, a.host) for a in cockpit.session.state.additions] == [
        ("engine", "X", "localhost")]
    assert len(cockpit.resume()) == 1 and made == [(" x ", "localhost")]  # listed, not joined
    assert asyncio.run(cockpit.reopen_recorded()) == ["re-opened: engine X on localhost"]
    assert made == [(" x ", "localhost"), ("X", "localhost")]
    with pytest.raises(JoinError, match="nothing joins as 'prometheus'"):
        cockpit.join("prometheus", "http://127.0.0.1:9")
    cockpit.session.close()
