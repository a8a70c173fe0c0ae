"""A session declares its mode; a cockpit over a recording builds only what
a recording uses (no probe runner, log follower, server launcher, captures)."""

from __future__ import annotations

import asyncio

import pytest

from perftriage.services.investigation import session as sessions
from perftriage.services.cockpit import Cockpit, NotLive
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.investigation.replay import Replayer
from perftriage.services.investigation.session import Session
from perftriage.services.investigation.watch import Watcher
from tests.support.helpers import EXAMPLE_SESSION


def test_each_kind_of_session_says_its_mode(tmp_path):
    assert Session().mode is sessions.LIVE and not Session().replay
    recorded, _ = Session.from_transcript(EXAMPLE_SESSION)
    assert recorded.mode is sessions.RECORDED and recorded.replay
    player = Replayer(EXAMPLE_SESSION, sessions_dir=tmp_path)
    assert player.session.mode is sessions.REPLAY and player.session.mode.annotations
    watcher = Watcher(EXAMPLE_SESSION)
    assert watcher.session.mode is sessions.WATCH and not watcher.session.mode.writes
    assert all(m.refusal for m in (sessions.RECORDED, sessions.REPLAY, sessions.WATCH))


@pytest.mark.parametrize("make", [lambda tmp: Replayer(EXAMPLE_SESSION, sessions_dir=tmp),
                                  lambda tmp: Watcher(EXAMPLE_SESSION)])
def test_a_cockpit_over_a_recording_runs_nothing_of_a_live_one(tmp_path, make):
    player = make(tmp_path)
    cockpit = Cockpit(registry=HostRegistry(), session=player.session)
    for part in ("probes", "logs", "servers", "profiles"):
        with pytest.raises(NotLive):
            getattr(cockpit, part)

    async def run() -> None:
        await cockpit.start()  # starts no source
        assert not list(cockpit.sources)
        await cockpit.stop()

    asyncio.run(run())
    assert [p.name for p in tmp_path.iterdir()] == []  # nothing added: nothing written


def test_a_live_cockpit_has_its_parts(tmp_path):
    cockpit = Cockpit(sessions_dir=tmp_path)
    assert cockpit.probes.session is cockpit.session and cockpit.logs is cockpit.servers.follower
    cockpit.session.close()
