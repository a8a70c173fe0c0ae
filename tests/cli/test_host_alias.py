"""`--host ALIAS` where ALIAS is the ssh target of a configured host uses
that host's settings (preamble, python), not a bare ad-hoc host."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.store.config import Config, HostConfig
from perftriage.services.hosts.registry import configured_by_ssh_target, resolve_hosts


def test_an_ssh_target_finds_the_configured_host():
    gpu = HostConfig(name="gpu", ssh="ubuntu@gpu-alias", preamble="source /venv/bin/activate")
    config = Config(hosts=[HostConfig(name="other", ssh="other-alias"), gpu])
    assert configured_by_ssh_target(config, "gpu-alias") is gpu
    assert configured_by_ssh_target(config, "ubuntu@gpu-alias") is gpu
    assert configured_by_ssh_target(config, "unknown-alias") is None
    reg = resolve_hosts(config, ["gpu-alias"])
    (host,) = reg.hosts.values()
    assert host.name == "gpu" and host.config.preamble == "source /venv/bin/activate"
    reg = resolve_hosts(config, ["someone@elsewhere"])  # still an ad-hoc host
    assert reg.names == ["someone@elsewhere"]
    assert reg.get("someone@elsewhere").config.preamble is None


@pytest.mark.ssh
def test_probe_on_the_alias_runs_the_hosts_preamble(tmp_path, sshd):
    site = tmp_path / "site"
    site.mkdir()
    (site / "only_in_the_venv.py").write_text("")
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[[hosts]]\nname = "gpu"\nssh = "{sshd.alias}"\npython = "{sys.executable}"\n'
                   f'preamble = "export PYTHONPATH={site}"\n')
    r = CliRunner().invoke(cli, ["--config", str(cfg), "--ssh-config", str(sshd.ssh_config),
                                 "probe", "--host", sshd.alias, "--json", "import",
                                 "only_in_the_venv"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["host"] == "gpu" and data["verdict"] == "ok"
