"""The restart form (S) shows what can change (issue 41, item 4): it opened
on ``sim `` with "name=value sets a placeholder" but named neither the
placeholders nor their values. Now it lists, per ``[[servers]]`` profile,
its state, each placeholder with its current value (the last run's, with
the profile's beside a value that run changed) and the last run's extra
arguments; the running profile comes first."""

from __future__ import annotations

from perftriage.ui.app import PerftriageApp
from perftriage.ui.screens.prompt import PromptScreen
from tests.support.helpers import wait_for
from tests.ui.test_view_keys_and_hosts import _close_all, _cockpit, _form


def _help(form: PromptScreen) -> str:
    return " ".join(str(form.query_one("#prompt-help").render()).split())


async def test_s_lists_each_placeholder_its_value_and_the_last_runs_extra_arguments() -> None:
    cockpit = _cockpit()
    app = PerftriageApp(cockpit)
    launcher = cockpit.servers
    async with app.run_test(size=(160, 45)) as pilot:
        form = await _form(app, pilot, "S")
        assert "sim (not started on h200): backend=triton" in _help(form)
        assert "last run's extra arguments: none" in _help(form)
        assert "name=value sets a placeholder for this run" in _help(form)
        assert form.query_one("Input").value == "sim "  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait_for(lambda: launcher.running("sim"), timeout=20)
        form = await _form(app, pilot, "S")
        assert "sim (starting on h200): backend=triton" in _help(form)
        await pilot.press(*"backend=flashinfer_cutedsl --moe-a2a 1", "enter")
        await wait_for(lambda: launcher.running("sim")
                       and launcher.runs["sim"].values == {"backend": "flashinfer_cutedsl"},
                       timeout=20)
        form = await _form(app, pilot, "S")
        shown = _help(form)
        assert "backend=flashinfer_cutedsl (profile: triton)" in shown, shown
        assert "last run's extra arguments: --moe-a2a 1" in shown
        await _close_all(app, pilot)
        await pilot.press("K")
        await wait_for(lambda: not launcher.running("sim"), timeout=20)
