"""Enter in the Triage view on a continued crafted investigation (issue 47
item 1): at 100×30 a recorded ncu step with a 4,000-character ``--kernel``
regex and ``-- /bin/sh -c …`` after it, and a stacks step with ``--pid 1
--native``, run nothing; what Enter would do and why it does not is on
screen, not pushed below the fold by the recorded regex."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text
from textual.widgets import DataTable, Static

from perftriage.services.cockpit import Cockpit
from perftriage.services.investigation.named import open_investigation
from perftriage.services.triage import next_step
from perftriage.ui.screens.triage import TriageScreen
from tests.services.test_next_step_live_only import CONFIG, crafted_investigation
from tests.support.helpers import app_opening, capture_notifications, wait_for


async def test_enter_on_a_recorded_finding_runs_nothing_and_says_why_above_the_fold(tmp_path):
    marker = tmp_path / "pwned"
    crafted_investigation(tmp_path / "sessions", marker)
    session = open_investigation("shared", tmp_path / "sessions", ["gpu2"])
    cockpit = Cockpit(CONFIG, session=session)
    cockpit.started = True  # no samplers, no SSH
    queued: list[tuple] = []
    cockpit.probes.enqueue = lambda *a, **k: queued.append(a) or "p1"  # type: ignore[method-assign,func-returns-value]
    app = app_opening(cockpit, TriageScreen)
    async with app.run_test(size=(100, 30)) as pilot:
        seen = capture_notifications(app)
        await wait_for(lambda: isinstance(app.screen, TriageScreen))
        screen = app.screen
        table = screen.query_one("#triage-findings", DataTable)
        await wait_for(lambda: table.row_count == 4)
        detail = screen.query_one("#triage-detail", Static)
        for row in range(4):
            table.move_cursor(row=row)
            await pilot.pause()
            cause = screen._rows[row][1].cause
            text = detail.render()
            plain = str(text)
            assert f"not now: {next_step.HISTORY}" in plain, (cause, plain)
            assert "/bin/sh" not in plain  # the recorded next step is cut short
            # the ⏎ line is on screen: within the lines the detail shows
            width = detail.content_region.width
            lines = [str(x) for x in Text(plain).wrap(Console(width=width), width)]
            at = next(i for i, ln in enumerate(lines) if ln.startswith("⏎ runs"))
            assert at < detail.content_region.height, (cause, at, detail.content_region)
            await pilot.press("enter")
            await pilot.pause()
        assert queued == [] and not marker.exists()
        assert sum(1 for m, sev in seen if m == next_step.HISTORY and sev == "warning") == 4
    session.close()
