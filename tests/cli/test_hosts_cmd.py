"""`perftriage hosts`, -H resolution, and the cockpit showing an SSH host's state."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tests.support.helpers import wait_for
from tests.support.sshd import free_port
from perftriage.cli import EXIT_UNREACHABLE, cli
from perftriage.core.store.config import Config, HostConfig
from perftriage.services.hosts.registry import HostSpecError, resolve_hosts
from perftriage.transport.ssh_options import SshOptions

pytestmark = pytest.mark.ssh


def _config(tmp_path, server, name="gpu-a", extra=""):
    path = tmp_path / "config.toml"
    path.write_text(f'[[hosts]]\nname = "{name}"\nssh = "{server.alias}"\n'
                    f'preamble = "export PT_Y=1"\ntags = ["h200"]\n{extra}')
    return path


def _invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_hosts_lists_configured_and_ad_hoc_hosts(tmp_path, sshd):
    cfg = _config(tmp_path, sshd)
    r = _invoke("--config", str(cfg), "hosts")
    assert r.exit_code == 0
    lines = r.output.splitlines()
    assert lines[0].split() == ["localhost", "local"]
    assert lines[1].startswith("gpu-a") and sshd.alias in lines[1] and "h200" in lines[1]
    r = _invoke("--config", str(cfg), "-H", "gpu-a", "-H", "root@10.9.9.9:2222", "hosts")
    assert [line.split()[0] for line in r.output.splitlines()] == ["gpu-a", "root@10.9.9.9:2222"]


def test_hosts_check_ok(tmp_path, sshd):
    cfg = _config(tmp_path, sshd)
    r = _invoke("--config", str(cfg), "--ssh-config", str(sshd.ssh_config), "hosts", "--check")
    assert r.exit_code == 0, r.output
    rows = {line.split()[0]: line.split()[1] for line in r.output.splitlines()}
    assert rows == {"localhost": "OK", "gpu-a": "OK"}


def test_hosts_check_unknown_host_key_exits_3_with_a_clear_message(tmp_path, sshd):
    known = tmp_path / "empty_known_hosts"
    known.write_text("")
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text(sshd.ssh_config.read_text().replace(str(sshd.known_hosts), str(known)))
    cfg = _config(tmp_path, sshd)
    r = _invoke("--config", str(cfg), "--ssh-config", str(ssh_config), "hosts", "--check")
    assert r.exit_code == EXIT_UNREACHABLE
    line = next(x for x in r.output.splitlines() if x.startswith("gpu-a"))
    assert "FAILED" in line and "host key unknown" in line and "--accept-new-host-keys" in line
    assert "Traceback" not in r.output
    assert known.read_text() == ""
    # the opt-in records the key, and then the strict check passes
    r = _invoke("--config", str(cfg), "--ssh-config", str(ssh_config), "--accept-new-host-keys",
                "hosts", "--check")
    assert r.exit_code == 0, r.output
    assert f"[127.0.0.1]:{sshd.port} ssh-ed25519 " in known.read_text()
    r = _invoke("--config", str(cfg), "--ssh-config", str(ssh_config), "hosts", "--check")
    assert r.exit_code == 0, r.output


def test_hosts_check_refused_port_exits_3(tmp_path, sshd):
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text(sshd.ssh_config.read_text().replace(f"Port {sshd.port}",
                                                              f"Port {free_port()}"))
    r = _invoke("--ssh-config", str(ssh_config), "-H", sshd.alias, "hosts", "--check")
    assert r.exit_code == EXIT_UNREACHABLE
    assert "connection refused" in r.output and "Traceback" not in r.output


def test_bad_host_spec_is_a_usage_error():
    r = _invoke("-H", "-oProxyCommand=evil", "hosts")
    assert r.exit_code == 2 and "invalid ssh target" in r.output
    with pytest.raises(HostSpecError):
        resolve_hosts(Config(), ["a b"])


def test_resolve_hosts_names_aliases_and_specs():
    config = Config(hosts=[HostConfig(name="gpu-a", ssh="root@10.0.0.5", preamble="x=1")])
    reg = resolve_hosts(config)
    assert reg.names == ["localhost", "gpu-a"]
    reg = resolve_hosts(config, ["gpu-a", "me@10.0.0.6:2200", "some-alias"],
                        ssh=SshOptions(accept_new_host_keys=True))
    assert reg.names == ["gpu-a", "me@10.0.0.6:2200", "some-alias"]
    t = reg.get("gpu-a").transport
    assert t.preamble == "x=1" and t.accept_new_host_key
    assert (reg.get("me@10.0.0.6:2200").transport.port) == 2200
    assert resolve_hosts(config, ["gpu-a"], with_localhost=True).names == ["localhost", "gpu-a"]


async def test_cockpit_shows_the_ssh_hosts_state(tmp_path, sshd):
    from perftriage.services.cockpit import Cockpit
    from perftriage.ui.widgets.hosts import host_block

    known = tmp_path / "empty_known_hosts"
    known.write_text("")
    bad_config = tmp_path / "ssh_config_strict"
    bad_config.write_text(sshd.ssh_config.read_text().replace(str(sshd.known_hosts), str(known))
                          .replace(f"Host {sshd.alias}", "Host unknown-key-box"))
    config = Config(hosts=[HostConfig(name="gpu-a", ssh=sshd.alias)])
    registry = resolve_hosts(config, ssh=SshOptions(config=sshd.ssh_config))
    registry.add(resolve_hosts(Config(), ["unknown-key-box"], ssh=SshOptions(config=bad_config))
                 .get("unknown-key-box"))
    cockpit = Cockpit(config, sessions_dir=tmp_path / "sessions", registry=registry,
                      sample_interval=0.2)
    await cockpit.start()
    try:
        hosts = cockpit.session.state.hosts
        await wait_for(lambda: hosts["gpu-a"].conn_state == "up", timeout=30)
        await wait_for(lambda: hosts["unknown-key-box"].conn_state == "down", timeout=30)
        assert "host key unknown" in (hosts["unknown-key-box"].reason or "")
        text = host_block(hosts["gpu-a"], cockpit.session.state.last_t)
        assert "gpu-a" in str(text)
        down = str(host_block(hosts["unknown-key-box"], cockpit.session.state.last_t))
        assert "host key unknown" in down
    finally:
        await cockpit.stop()
