"""The Fleet view: from a real Prometheus (16 emulated hosts x 8 GPUs, two
planted outliers) to digging into a host over the loopback sshd, and an SVG
snapshot of a 64-host fleet."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from tests.support.fleet_exporters import emulated_snapshot, parse_outliers
from tests.support.helpers import app_opening, opened_then, wait_for
from perftriage.ui.app import PerftriageApp
from perftriage.core.store.config import Config, FleetConfig
from perftriage.ui.screens.fleet import FleetScreen
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry
from perftriage.transport.ssh_options import SshOptions
from perftriage.services.sources.fleet import FleetSource

SNAPSHOT_OUTLIERS = ["node017:3:DCGM_FI_PROF_DRAM_ACTIVE=0.31",
                     "node042::sglang:gen_throughput=300",
                     "node005:1:DCGM_FI_DEV_POWER_USAGE=300"]


def _first_column(table: DataTable) -> list[str]:
    return [table.get_row_at(i)[0].plain for i in range(table.row_count)]


@pytest.mark.ssh
async def test_fleet_view_ranks_and_digs_into_a_host(prometheus_fleet, quiet_sshd):
    config = Config(fleet=FleetConfig(prometheus=prometheus_fleet.url, interval=1.0,
                                      ssh=quiet_sshd.alias))
    cockpit = Cockpit(config, registry=HostRegistry(ssh=SshOptions(config=quiet_sshd.ssh_config)))
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_for(lambda: cockpit.session.state.fleet is not None, timeout=60)
        await pilot.press("F")
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        grid = screen.query_one("#fleet-grid", DataTable)
        await wait_for(lambda: grid.row_count == 16, timeout=30)
        # the most deviating metric first: node007's throughput (a per-host metric)
        assert screen.metric == "sglang:gen_throughput" and _first_column(grid)[0] == "node007"
        await pilot.press("m")
        assert screen.metric == "DCGM_FI_PROF_DRAM_ACTIVE"
        row = grid.get_row_at(0)
        assert row[0].plain == "node003" and row[2 + 3].plain == "0.31"
        assert "bold red" in str(row[2 + 3].style)
        outliers = screen.query_one("#fleet-outliers", DataTable)
        assert [outliers.get_row_at(i)[1].plain for i in range(outliers.row_count)][1] == (
            "node003 GPU3 DRAM active 0.31 vs fleet median 0.56")
        folded = str(screen.query_one("#fleet-folded").render())
        assert "node[003,007]" in folded and "node[001-002,004-006,008-016]" in folded
        outliers.focus()
        await pilot.press("down")
        # the highlighted outlier over the last 10 minutes, from /api/v1/query_range
        history = screen.query_one("#fleet-history")
        await wait_for(lambda: "fleet median" in str(history.render()), timeout=30)
        assert "node003 GPU3 DRAM active, last 10 min" in str(history.render())
        await pilot.press("enter")
        await wait_for(lambda: not isinstance(app.screen, FleetScreen), timeout=30)
        assert "node003" in cockpit.registry.hosts
        await wait_for(lambda: cockpit.session.state.hosts.get("node003") is not None
                       and cockpit.session.state.hosts["node003"].conn_state == "up", timeout=60)
        pid = cockpit.probes.enqueue("node003", "shell", ["echo digging"])
        await cockpit.probes.wait(pid)
        assert cockpit.session.state.probes[pid].stdout == "digging\n"


async def test_fleet_view_without_prometheus_says_how_to_get_one():
    app = PerftriageApp(Cockpit(registry=HostRegistry()))
    async with app.run_test(size=(120, 30)) as pilot:
        app.push_screen(FleetScreen())
        await pilot.pause()
        head = app.screen.query_one("#fleet-head")
        await wait_for(lambda: "--prometheus URL" in str(head.render()))
        await pilot.press("enter", "escape")  # nothing to dig into; back to the cockpit
        await wait_for(lambda: not isinstance(app.screen, FleetScreen))


def _snapshot_app():
    cockpit = Cockpit(registry=HostRegistry())
    source = FleetSource(cockpit.session, "http://127.0.0.1:9090")
    source.accept(emulated_snapshot(64, 8, parse_outliers(SNAPSHOT_OUTLIERS)))
    return app_opening(cockpit, lambda: FleetScreen(source))


def test_fleet_view_snapshot(snap_compare):
    assert snap_compare(_snapshot_app(), terminal_size=(160, 45),
                        run_before=opened_then(FleetScreen, "m", "m", settled=_host_column_fits))


def _host_column_fits(screen) -> bool:
    """The grid's host column as wide as its names ("node017"): a loaded box
    took the snapshot before the table's idle pass sized it from its new rows
    (the names cut to "node")."""
    columns = screen.query_one("#fleet-grid", DataTable).ordered_columns
    return bool(columns) and columns[0].content_width >= len("node017")


async def test_a_big_fleet_draws_the_most_deviating_hosts_and_counts_the_rest():
    cockpit = Cockpit(registry=HostRegistry())
    source = FleetSource(cockpit.session, "http://127.0.0.1:9090")
    source.accept(emulated_snapshot(150, 8, parse_outliers(SNAPSHOT_OUTLIERS)))
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 45)) as pilot:
        app.push_screen(FleetScreen(source))
        await pilot.pause()
        await pilot.press("m", "m")  # DRAM active
        grid = app.screen.query_one("#fleet-grid", DataTable)
        hosts = _first_column(grid)
        assert len(hosts) == 101 and hosts[0] == "node017"
        assert hosts[-1].startswith("+50 hosts within ")
        grid.move_cursor(row=100)
        assert app.screen.selected_host() is None  # the count line is no host
