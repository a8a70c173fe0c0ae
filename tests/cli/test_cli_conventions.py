"""CLI conventions: global options also after the subcommand (the
subcommand's own option of the same name wins), and a host-key refusal that
names a command which works."""

from __future__ import annotations

import json
import shlex
import sys

import pytest
from click.testing import CliRunner

from perftriage.cli import EXIT_UNREACHABLE, cli


def _invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_sessions_dir_after_the_subcommand(tmp_path):
    empty = tmp_path / "no-sessions-here"
    empty.mkdir()
    r = _invoke("sessions", "--sessions-dir", str(empty))
    assert r.exit_code == 0, r.output
    assert str(empty) in r.output
    assert r.output == _invoke("--sessions-dir", str(empty), "sessions").output


def test_config_and_hosts_after_the_subcommand(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[[hosts]]\nname = "after-box"\nssh = "after-alias"\n')
    r = _invoke("hosts", "--config", str(cfg))
    assert r.exit_code == 0, r.output
    assert [line.split()[0] for line in r.output.splitlines()] == ["localhost", "after-box"]
    r = _invoke("hosts", "--config", str(cfg), "-H", "after-box")
    assert [line.split()[0] for line in r.output.splitlines()] == ["after-box"]
    r = _invoke("hosts", "--config", str(tmp_path / "missing.toml"))
    assert r.exit_code == 2 and "missing.toml" in r.output  # explicit: must exist


def test_the_subcommands_own_option_wins(tmp_path):
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[[hosts]]\nname = "localhost"\npython = "{sys.executable}"\n')
    # probe --host is probe's host, not the global -H/--host list
    r = _invoke("probe", "--config", str(cfg), "--host", "localhost", "--json", "which", "sh")
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["host"] == "localhost"
    # the global -H still works after probe (probe takes the -H hosts with --all)
    r = _invoke("probe", "--config", str(cfg), "-H", "localhost", "--all", "--json",
                "which", "sh")
    assert r.exit_code == 0, r.output
    assert [d["host"] for d in json.loads(r.output)] == ["localhost"]


def test_ssh_options_after_the_subcommand_reach_the_one_ssh_value(tmp_path):
    from perftriage.cli.globals import Globals
    from perftriage.transport.ssh_options import SshOptions

    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text("")
    seen = []
    ctx = cli.make_context("perftriage", ["sessions"])
    ctx.obj = Globals()  # what the group's callback makes before the subcommand parses
    with ctx:
        command = cli.get_command(ctx, "sessions")
        sub = command.make_context("sessions", ["--ssh-config", str(ssh_config),
                                                "--accept-new-host-keys"], parent=ctx)
        seen.append(sub.find_object(Globals).ssh)
    assert seen == [SshOptions(config=ssh_config, accept_new_host_keys=True)]


def test_a_bad_value_after_the_subcommand_is_a_usage_error():
    r = CliRunner().invoke(cli, ["status", "--sample-interval", "0"])
    assert r.exit_code == 2 and "Traceback" not in r.output


@pytest.mark.ssh
def test_host_key_refusal_names_a_command_that_works(tmp_path, sshd):
    known = tmp_path / "empty_known_hosts"
    known.write_text("")
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text(sshd.ssh_config.read_text().replace(str(sshd.known_hosts), str(known)))
    r = _invoke("--ssh-config", str(ssh_config), "-H", sshd.alias, "hosts", "--check")
    assert r.exit_code == EXIT_UNREACHABLE
    assert "host key unknown" in r.output and "refused" not in r.output
    command = r.output.split("run: ", 1)[1].split(" (or set", 1)[0]
    argv = shlex.split(command)
    assert argv[:2] == ["perftriage", "hosts"]
    r = _invoke(*argv[1:])  # the command, exactly as the message gives it
    assert f"[127.0.0.1]:{sshd.port} ssh-ed25519 " in known.read_text()
    assert r.exit_code == 0, r.output
    r = _invoke("--ssh-config", str(ssh_config), "-H", sshd.alias, "hosts", "--check")
    assert r.exit_code == 0, r.output
