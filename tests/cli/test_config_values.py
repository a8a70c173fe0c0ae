"""Config values that used to validate and then crash (or break later):
every number has a type, a range and a finite check, every template and URL
is checked when the file loads; each is one ``file:line: reason`` line and
exit 2, never a traceback."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.store.config import ConfigError, parse

CASES = {
    "server-template-brace": ('[[servers]]\nname = "s"\ncommand = "echo {"\n', 3,
                              "server 's': command template"),
    "server-template-attr": ('[[servers]]\nname = "s"\ncommand = "echo {tp.real}"\n', 3,
                             "server 's': command template"),
    "server-template-index": ('[[servers]]\nname = "s"\ncommand = "echo {0}"\n', 3,
                              "server 's': command template"),
    "ring-huge": ('[ui]\nlog_ring_lines = 99999999999999999999999\n', 2,
                  "ui.log_ring_lines must be between 1 and"),
    "transcript-cap-huge": ('[ui]\ntranscript_log_cap = 99999999999999999999\n', 2,
                            "ui.transcript_log_cap must be between 0 and"),
    "ssh-port-big": ('[[hosts]]\nname = "a"\nssh = "root@127.0.0.1:99999"\n', 3,
                     "invalid port in ssh target 'root@127.0.0.1:99999'"),
    "ssh-port-negative": ('[[hosts]]\nname = "a"\nssh = "root@127.0.0.1:-1"\n', 3,
                          "invalid port in ssh target"),
    "connect-timeout-nan": ('[[hosts]]\nname = "a"\nconnect_timeout = nan\n', 3,
                            "connect_timeout must be a finite number"),
    "keepalive-inf": ('[[hosts]]\nname = "a"\nkeepalive_interval = inf\n', 3,
                      "keepalive_interval must be a finite number"),
    "channels-huge": ('[[hosts]]\nname = "a"\nmax_channels = 99999999999\n', 3,
                      "max_channels must be between 1 and"),
    "sample-interval-inf": ('[ui]\nsample_interval = inf\n', 2,
                            "ui.sample_interval must be a finite number"),
    "threshold-negative": ('[fleet]\nthreshold = -1\n', 2, "fleet.threshold must be between 0 and"),
    "threshold-nan": ('[fleet]\nthreshold = nan\n', 2, "fleet.threshold must be a finite number"),
    "fleet-interval-inf": ('[fleet]\ninterval = inf\n', 2, "fleet.interval must be a finite number"),
    "prometheus-not-url": ('[fleet]\nprometheus = "not a url"\n', 2, "fleet.prometheus: "),
    "prometheus-ftp": ('[fleet]\nprometheus = "ftp://h:9090"\n', 2, "fleet.prometheus: "),
    "prometheus-port": ('[fleet]\nprometheus = "http://h:99999"\n', 2, "fleet.prometheus: "),
    "fleet-ssh-shell": ('[fleet]\nssh = "{host}; rm -rf /"\n', 2, "fleet.ssh: "),
    "probe-timeout-inf": ('[[probes]]\nname = "t"\nkind = "import"\nargs = ["x"]\ntimeout = inf\n',
                          5, "timeout must be a finite number"),
    "health-url": ('[[servers]]\nname = "s"\ncommand = "x"\nhealth_url = "file:///etc/passwd"\n', 4,
                   "server 's': health_url"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_value_is_one_line_with_file_and_line(tmp_path, name):
    body, line, reason = CASES[name]
    path = tmp_path / "config.toml"
    path.write_text(body)
    r = CliRunner().invoke(cli, ["--config", str(path), "hosts"])
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
    lines = r.output.strip().splitlines()
    assert len(lines) == 1, r.output
    assert lines[0].startswith(f"Error: {path}:{line}: "), lines[0]
    assert reason in lines[0], lines[0]


@pytest.mark.parametrize("opener,closer", [("[", "]"), ("{x=", "}")])
def test_deeply_nested_toml_is_a_config_error(opener, closer):
    text = "ok = 1\na = " + opener * 5000 + closer * 5000 + "\n"
    with pytest.raises(ConfigError) as err:
        parse(text, "deep.toml")
    assert err.value.line == 2
    assert "nested too deeply" in err.value.message


def test_good_values_and_templates_still_load():
    config = parse('[ui]\nsample_interval = 0.5\n[fleet]\nprometheus = "prom:9090"\nthreshold = 3.5\n'
                   'ssh = "admin@{host}"\n'
                   '[[servers]]\nname = "s"\ncommand = "python -m sglang.launch_server --tp {tp}"\n'
                   'args = {tp = "8"}\n')
    assert config.fleet.threshold == 3.5 and config.servers[0].args == {"tp": "8"}


@pytest.mark.parametrize("template", ["echo {", "echo }", "echo {tp.real}", "echo {0[1]}"])
def test_a_bad_template_that_reaches_the_launcher_is_a_launch_error(template):
    from perftriage.services.logs.server_launcher import LaunchError, placeholders, render

    with pytest.raises(LaunchError):
        render(template, dict.fromkeys(placeholders(template), "1"))
