"""The cockpit at 100x30, 140x40 and 200x50 (the bundled example session,
8 GPUs on one host): what must show at each size, and SVG snapshots.

Update the snapshots after an intended UI change with ``--snapshot-update``
and look at the SVGs before committing them.
"""

from __future__ import annotations

import pytest
from textual.widgets import Static

from perftriage.ui.widgets.hosts import HostsPane
from perftriage.ui.widgets.probes import ProbesPane

from tests.support.helpers import replay_app

SIZES = [(100, 30), (140, 40), (200, 50)]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_cockpit_snapshot(snap_compare, size):
    assert snap_compare(replay_app(), terminal_size=size)


async def test_at_100x30_every_gpu_has_its_row_and_results_have_room():
    app = replay_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(1.0)
        hosts = str(app.screen.query_one(HostsPane).query_one("#hosts-body", Static).render())
        lines = hosts.splitlines()
        assert [line.split()[0] for line in lines if line.lstrip().startswith("GPU")] == [
            f"GPU{i}" for i in range(8)]
        assert "more" not in hosts
        local = next(line for line in lines if line.startswith("localhost"))
        assert "CPU" in local and "RAM" in local  # a host without GPUs: one line
        assert sum("RTX PRO 6000" in line for line in lines) <= 1  # the model once at most
        table = app.screen.query_one(ProbesPane).table
        result = next(c for c in table.columns.values() if c.key.value == "result")
        assert result.width >= 10
        assert sum(c.width + 2 * table.cell_padding for c in table.columns.values()) \
            <= table.size.width + 2
        await pilot.press("q")


@pytest.mark.parametrize("size", [(160, 45), (175, 45)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_probes_host_column_fits_the_host_names(size, tmp_path):
    """At 160 columns (and a 1400 px browser, ~175) the Probes pane is
    under 90 wide: the host column showed 8 characters, "localhos"."""
    from perftriage.core.model import events as ev
    from tests.ui.test_logs_pane import make_app

    app = make_app(tmp_path)
    for n, host in enumerate(["localhost", "gpu-a", "h200-node-017"]):
        app.cockpit.session.emit(ev.ProbeQueued(probe_id=f"p{n}", host=host, kind="which",
                                                args=["nsys"]))
    async with app.run_test(size=size) as pilot:
        await pilot.pause(1.0)
        table = app.screen.query_one(ProbesPane).table
        host = next(c for c in table.columns.values() if c.key.value == "host")
        assert host.width == len("h200-node-017")
        assert "localhost" in table.get_row("p0")[1].plain
        await pilot.press("q")


@pytest.mark.parametrize("key,view", [("P", "ProfileScreen"), ("T", "StacksScreen"),
                                      ("Y", "TriageScreen"), ("F", "FleetScreen")])
async def test_at_100x30_no_view_cuts_a_footer_key(key, view):
    """The views used Textual's plain footer: at 100 columns their last key
    was cut mid-word ("S Serv") under the palette key. Every key shown is
    whole, and the palette key keeps its place at the right."""
    from textual.widgets._footer import FooterKey

    from perftriage.ui.widgets.footer import FittingFooter
    from tests.support.helpers import wait_for

    app = replay_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.5)
        await pilot.press(key)
        await wait_for(lambda: type(app.screen).__name__ == view)
        await pilot.pause(0.5)
        footer = app.screen.query_one(FittingFooter)
        keys = [k for k in footer.query(FooterKey) if k.display]
        palette = [k for k in keys if k.has_class("-command-palette")]
        assert len(palette) == 1 and palette[0].region.right <= 100
        others = [k for k in keys if not k.has_class("-command-palette")]
        assert len(others) >= 3
        assert all(k.region.right <= palette[0].region.x for k in others)
        assert any(not k.display for k in footer.query(FooterKey))  # some left out, whole
