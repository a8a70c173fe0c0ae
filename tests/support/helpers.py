"""Shared helpers for tests (no fixtures here: see conftest.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
FIXTURES = TESTS / "fixtures"  # real captures and logs the tests read
GOLDEN = TESTS / "golden"
SUPPORT = TESTS / "support"
FAKE_NVIDIA_SMI_DIR = SUPPORT / "fake_nvidia_smi"  # put first on a host's PATH
EXAMPLE_SESSION = REPO / "sessions" / "example-moe-gap.jsonl"


def replay_app(path: Path = EXAMPLE_SESSION):
    """The cockpit app showing a saved session (deterministic: for snapshots)."""
    from perftriage.ui.app import PerftriageApp
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts.registry import HostRegistry
    from perftriage.services.investigation.session import Session

    session, _ = Session.from_transcript(path)
    return PerftriageApp(Cockpit(registry=HostRegistry(), session=session))


def player_app(path: Path = EXAMPLE_SESSION, *, at: float | None = None, sessions_dir=None,
               clock=None):
    """The replay screen over ``path`` (``perftriage replay``'s player),
    indexed up front (deterministic), at session time ``at``."""
    from perftriage.ui.app import PerftriageApp
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts.registry import HostRegistry
    from perftriage.services.investigation.replay import Replayer

    replayer = Replayer(path, sessions_dir=sessions_dir, clock=clock or (lambda: 0.0))
    replayer.timeline.scan()
    if at is not None:
        replayer.player.seek_time(at)
    return PerftriageApp(Cockpit(registry=HostRegistry(), session=replayer.session)), replayer


def app_opening(cockpit, screen):
    """The cockpit app that opens on ``screen()`` (a view's snapshot: the
    screen pushed once the app is mounted, as its key would)."""
    from perftriage.ui.app import PerftriageApp

    class OpeningApp(PerftriageApp):
        def on_mount(self) -> None:
            super().on_mount()
            self.call_later(lambda: self.push_screen(screen()))

    return OpeningApp(cockpit)


def opened_then(screen_type, *keys: str, ready=None, settled=None):
    """A snapshot's ``run_before`` for an :func:`app_opening` app: waits until
    ``screen_type`` is on top and ``ready(screen)`` holds, then presses
    ``keys``, then waits for ``settled(screen)``. snap_compare's ``press``
    alone can land before the screen is pushed (it goes to the main screen):
    a loaded CI box took the Stacks view's snapshot without the frame tree
    its Enter opens."""
    async def run_before(pilot) -> None:
        await wait_for(lambda: isinstance(pilot.app.screen, screen_type)
                       and (ready is None or ready(pilot.app.screen)))
        await pilot.pause()
        if keys:
            await pilot.press(*keys)
        await pilot.pause()
        if settled is not None:
            await wait_for(lambda: settled(pilot.app.screen))
            await pilot.pause()

    return run_before


async def wait_for(predicate, timeout: float = 10.0, interval: float = 0.02):
    """Poll ``predicate`` until true (instead of sleeping a fixed time)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {predicate}")
        await asyncio.sleep(interval)


def capture_notifications(app) -> list[tuple[str, str]]:
    """Record (message, severity) of every ``app.notify`` call."""
    seen: list[tuple[str, str]] = []
    original = app.notify

    def notify(message, *args, **kwargs):
        seen.append((str(message), kwargs.get("severity", "information")))
        return original(message, *args, **kwargs)

    app.notify = notify
    return seen


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a zombie is dead for us)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone, maybe between open and read
        return False
