"""`perftriage probe --all --group`: 64 hosts (64 aliases of the loopback
sshd), identical answers folded by node set, through a bounded window."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tests.support.ssh_aliases import write_aliases
from perftriage.cli import cli
from perftriage.core.fleet.fold import group_answers
from perftriage.core.model.state import ProbeState

pytestmark = pytest.mark.ssh


def _probe(ssh_config, config, *args, hosts="node[01-64]"):
    return CliRunner().invoke(cli, ["--config", str(config), "--ssh-config", str(ssh_config),
                                    "-H", hosts, "probe", "--all", "--group", *args],
                              catch_exceptions=False)


def test_64_hosts_fold_into_one_answer(quiet_sshd, tmp_path):
    ssh_config, config, names = write_aliases(quiet_sshd, 64, tmp_path)
    r = _probe(ssh_config, config, "--json", "shell", "echo same answer")
    assert r.exit_code == 0, r.output
    groups = json.loads(r.output)
    assert len(groups) == 1
    g = groups[0]
    assert (g["nodeset"], g["count"], g["verdict"], g["exit_status"]) == (
        "node[01-64]", 64, "ok", 0)
    assert g["hosts"] == names and g["stdout"] == "same answer\n"


def test_differing_answers_are_separate_groups_largest_first(quiet_sshd, tmp_path):
    odd = {"node03": "export PT_RACK=b", "node07": "export PT_RACK=b",
           "node05": "export PT_RACK=c"}
    ssh_config, config, _ = write_aliases(quiet_sshd, 8, tmp_path, preambles=odd)
    r = _probe(ssh_config, config, "--window", "3", "shell", 'echo "rack ${PT_RACK:-a}"',
               hosts="node[01-08]")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == [
        "-" * 15, "node[01-02,04,06,08] (5)  ok  rack a", "-" * 15, "    rack a",
        "-" * 15, "node[03,07] (2)  ok  rack b", "-" * 15, "    rack b",
        "-" * 15, "node05 (1)  ok  rack c", "-" * 15, "    rack c",
    ]


def test_unreachable_hosts_fold_apart_and_exit_3(quiet_sshd, tmp_path):
    ssh_config, config, _ = write_aliases(quiet_sshd, 4, tmp_path)
    text = ssh_config.read_text().split("Host node04\n")
    ssh_config.write_text(text[0] + "Host node04\n" + text[1].replace(
        f"Port {quiet_sshd.port}", "Port 1", 1))
    r = _probe(ssh_config, config, "--json", "shell", "true", hosts="node[01-04]")
    assert r.exit_code == 3
    groups = json.loads(r.output)
    assert [(g["nodeset"], g["verdict"]) for g in groups] == [("node[01-03]", "ok"),
                                                              ("node04", "error")]


def test_a_bad_node_set_is_a_usage_error(tmp_path):
    r = CliRunner().invoke(cli, ["-H", "node[01-", "probe", "--all", "shell", "true"])
    assert r.exit_code == 2 and "node[01-" in r.output and "Traceback" not in r.output


def test_grouping_ignores_duration_and_keeps_host_order():
    def state(host, out, dur):
        return ProbeState(probe_id=host, host=host, kind="shell", args=[], command="",
                          status="ok", exit_status=0, summary="exit 0", stdout=out,
                          duration_s=dur)

    groups = group_answers([state("b2", "x", 0.1), state("b1", "x", 0.3), state("a1", "y", 0.2)])
    assert [(g.nodeset, g.stdout) for g in groups] == [("b[1-2]", "x"), ("a1", "y")]
    assert groups[0].hosts == ["b2", "b1"]


async def test_the_fanout_screen_folds_a_fan_out_by_node_set(quiet_sshd, tmp_path):
    from textual.widgets import DataTable, TextArea

    from perftriage.ui.app import PerftriageApp
    from perftriage.core.store.config import load
    from perftriage.ui.screens.fanout import FanoutScreen
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts.registry import resolve_hosts
    from perftriage.transport.ssh_options import SshOptions

    odd = {"node04": "export PT_RACK=b"}
    ssh_config, config_path, names = write_aliases(quiet_sshd, 6, tmp_path, preambles=odd)
    config = load(config_path)
    cockpit = Cockpit(config, registry=resolve_hosts(config, names, ssh=SshOptions(config=ssh_config)))
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(140, 40)) as pilot:
        ids = cockpit.probes.enqueue_all("shell", ['echo "rack ${PT_RACK:-a}"'])
        await cockpit.probes.wait(ids)
        await pilot.press("equals_sign")  # the latest fan-out, folded
        await pilot.pause(0.5)
        assert isinstance(app.screen, FanoutScreen)
        table = app.screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert rows == [["node[01-03,05-06]", "5", "ok", "rack a"], ["node04", "1", "ok", "rack b"]]
        await pilot.press("down")
        assert "rack b" in app.screen.query_one(TextArea).text
