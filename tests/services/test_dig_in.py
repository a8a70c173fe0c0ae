"""Prometheus chooses where to look, SSH digs: a fleet host joins a running
cockpit as an SSH host (real loopback sshd, fake nvidia-smi on its PATH)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from tests.support.helpers import FAKE_NVIDIA_SMI_DIR, wait_for
from perftriage.core.store.config import Config, FleetConfig, parse
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.dig_in import DigInError, fleet_host_config
from perftriage.services.hosts.registry import HostRegistry
from perftriage.transport.ssh_options import SshOptions

pytestmark = pytest.mark.ssh
FAKE_DIR = FAKE_NVIDIA_SMI_DIR


def _fleet_config(sshd, tmp_path):
    control = tmp_path / "control"
    control.write_text("ok")
    preamble = (f"export PATH={shlex.quote(f'{FAKE_DIR}:' + os.environ['PATH'])} "
                f"FAKE_NVSMI_CONTROL={shlex.quote(str(control))}")
    return Config(fleet=FleetConfig(ssh=sshd.alias, preamble=preamble))


async def test_a_fleet_host_joins_the_cockpit_and_is_sampled_and_probed(quiet_sshd, tmp_path):
    cockpit = Cockpit(_fleet_config(quiet_sshd, tmp_path),
                      registry=HostRegistry(ssh=SshOptions(config=quiet_sshd.ssh_config)),
                      sample_interval=0.2)
    await cockpit.start()
    try:
        assert cockpit.dig_in("node117") is True
        assert cockpit.dig_in("node117") is False  # already there
        state = cockpit.session.state
        await wait_for(lambda: state.hosts["node117"].conn_state == "up", timeout=20)
        await wait_for(lambda: len(state.hosts["node117"].gpus) == 2, timeout=20)
        pid = cockpit.probes.enqueue("node117", "shell", ["echo dug"])
        await cockpit.probes.wait(pid)
        assert state.probes[pid].status == "ok" and state.probes[pid].stdout == "dug\n"
    finally:
        await cockpit.stop()


def test_fleet_host_names_must_be_plain_and_config_entries_win():
    config = parse('[fleet]\nssh = "admin@{host}.dc1:2222"\n\n[[hosts]]\nname = "node9"\n'
                   'ssh = "jump-node9"\n')
    assert fleet_host_config(config, "node117").ssh == "admin@node117.dc1:2222"
    assert fleet_host_config(config, "node9").ssh == "jump-node9"
    with pytest.raises(DigInError, match="not a plain host name"):
        fleet_host_config(config, "x;rm -rf ~")
