"""Every bad config value is one line, ``file:line: reason``, exit 2, never a
traceback and never silently accepted."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from perftriage.cli import cli

CASES = {
    "sample-interval-zero": ('[ui]\nsample_interval = 0\n', 2, "ui.sample_interval must be at least 0.05 s"),
    "sample-interval-negative": ('[ui]\nsample_interval = -1.5\n', 2, "ui.sample_interval must be at least"),
    "log-ring-negative": ('[ui]\nlog_ring_lines = -5\n', 2, "ui.log_ring_lines must be at least 1"),
    "ssh-shell": ('[[hosts]]\nname = "a"\nssh = "h; x"\n', 3, "invalid ssh target 'h; x'"),
    "ssh-option": ('[[hosts]]\nname = "a"\nssh = "-oProxyCommand=x"\n', 3, "invalid ssh target"),
    "not-utf8": (b'# ok\n[[hosts]]\nname = "a\xff"\n', 3, "not UTF-8 text (byte 0xff)"),
    "duplicate-host": ('[[hosts]]\nname = "a"\n\n[[hosts]]\nname = "a"\n', 5, "duplicate host name 'a'"),
    "empty-host": ('[[hosts]]\nname = ""\n', 2, "empty host name"),
    "control-in-host": ('[[hosts]]\nname = "a\\u001b[2J"\n', 2, "control characters"),
    "unknown-probe-kind": ('[[probes]]\nname = "t"\nkind = "imprt"\nargs = ["x"]\n', 3,
                           "unknown probe kind 'imprt'; known: grep, http, import"),
    "server-unknown-host": ('[[servers]]\nname = "s"\ncommand = "x"\nhost = "ghost"\n', 4,
                            "server 's': unknown host 'ghost'"),
    "relative-log": ('[[hosts]]\nname = "a"\nlogs = ["logs/server.log"]\n', 3,
                     "log path 'logs/server.log' is relative"),
    "relative-server-log": ('[[servers]]\nname = "s"\ncommand = "x"\nlog = "s.log"\n', 4,
                            "log path 's.log' is relative"),
    "bad-redact-regex": ('[security]\nredact = ["("]\n', 2, "security.redact[0]: not a regex"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_value_is_one_line_with_file_and_line(tmp_path, name):
    body, line, reason = CASES[name]
    path = tmp_path / "config.toml"
    path.write_bytes(body if isinstance(body, bytes) else body.encode())
    for argv in (["hosts"], ["status", "--json"], ["probe", "shell", "true"]):
        r = CliRunner().invoke(cli, ["--config", str(path), *argv])
        assert r.exit_code == 2, (argv, r.output)
        assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
        lines = r.output.strip().splitlines()
        assert len(lines) == 1, r.output
        assert lines[0].startswith(f"Error: {path}:{line}: "), lines[0]
        assert reason in lines[0], lines[0]


def test_the_cockpit_does_not_start_on_a_bad_config(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[ui]\nsample_interval = 0\n')
    r = CliRunner().invoke(cli, ["--config", str(path)])
    assert r.exit_code == 2 and f"{path}:2: ui.sample_interval" in r.output


def test_perftriage_config_naming_a_missing_file(tmp_path, monkeypatch):
    missing = tmp_path / "nope.toml"
    monkeypatch.setenv("PERFTRIAGE_CONFIG", str(missing))
    r = CliRunner().invoke(cli, ["hosts"])
    assert r.exit_code == 2
    assert r.output.strip() == f"Error: {missing}: config file not found"


def test_a_good_config_still_loads(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(
        '[ui]\nsample_interval = 0.5\nlog_ring_lines = 10\n\n'
        '[[hosts]]\nname = "gpu1"\nssh = "me@10.0.0.1:2222"\nlogs = ["/var/log/x.log"]\n\n'
        '[[hosts]]\nname = "gpu2"\nssh = "[::1]:22"\n\n'
        '[[probes]]\nname = "t"\nkind = "import"\nargs = ["json"]\n\n'
        '[[servers]]\nname = "s"\ncommand = "x"\nhost = "gpu1"\nlog = "/tmp/s.log"\n\n'
        '[security]\nredact = ["corp-[0-9]+"]\n')
    r = CliRunner().invoke(cli, ["--config", str(path), "hosts"])
    assert r.exit_code == 0, r.output
    assert "gpu1" in r.output and "gpu2" in r.output
