"""Regenerate docs/screenshot.svg (the README's screenshot): the cockpit on
the seed investigation (sessions/example-moe-gap.jsonl) at its end, 160x45,
the Probes pane focused.

    python scripts/make_screenshot.py
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from perftriage.ui.app import PerftriageApp
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.investigation.session import Session

ROOT = Path(__file__).resolve().parent.parent
SESSION = ROOT / "sessions" / "example-moe-gap.jsonl"
OUT = ROOT / "docs" / "screenshot.svg"


async def main() -> None:
    session, _ = Session.from_transcript(SESSION)
    app = PerftriageApp(Cockpit(registry=HostRegistry(), session=session))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0.5)
        await pilot.press("2")  # the Probes pane: its keys lead the footer
        await pilot.pause(0.5)
        app.save_screenshot(OUT.name, str(OUT.parent))
        await pilot.press("q")
    print(OUT)


if __name__ == "__main__":
    asyncio.run(main())
