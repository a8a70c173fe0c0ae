"""The cockpit at the two sizes triage happens at: 160x45 and 100x30 (the
result column, the selected probe whole, "+N more" GPUs, the footer's whole
keys). Look at the SVGs after --snapshot-update."""

from tests.support.helpers import replay_app


async def _focus_probes(pilot):
    await pilot.press("2")
    await pilot.pause(0.3)


def test_cockpit_160x45_probes_focused(snap_compare):
    assert snap_compare(replay_app(), terminal_size=(160, 45), run_before=_focus_probes)


def test_cockpit_100x30_probes_focused(snap_compare):
    assert snap_compare(replay_app(), terminal_size=(100, 30), run_before=_focus_probes)
