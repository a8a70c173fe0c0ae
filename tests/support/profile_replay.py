"""The Profile view (``P``) of a replay whose only events are imported
traces: the cockpit imports ``files``, the transcript is replayed, and the
view is open on the first capture."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from textual.app import App
from textual.pilot import Pilot

from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry
from perftriage.ui.screens.profile import ProfileScreen
from tests.support.helpers import replay_app, wait_for


@contextlib.asynccontextmanager
async def profile_view_of(files: list[Path], sessions: Path,
                          size: tuple[int, int]) -> AsyncIterator[tuple[App, Pilot, ProfileScreen]]:
    live = Cockpit(registry=HostRegistry(), sessions_dir=sessions)
    await live.profiles.import_files(files)
    live.session.close()
    assert live.session.path is not None
    app = replay_app(live.session.path)
    async with app.run_test(size=size) as pilot:
        await pilot.press("P")
        await wait_for(lambda: isinstance(app.screen, ProfileScreen))
        screen = app.screen
        assert isinstance(screen, ProfileScreen)
        await wait_for(lambda: "prof1" in str(screen.query_one("#profile-head").render()))
        yield app, pilot, screen
