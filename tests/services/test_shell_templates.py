"""A ``[[probes]]`` template of kind ``shell``: extra arguments are data,
quoted (shlex.quote) by default, wherever ``{args}`` says or at the end;
only an explicit ``{args_raw}`` puts them in unquoted. ``--help`` says so."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perftriage.core.probes import resolve

REPO = Path(__file__).resolve().parents[2]


class T:
    def __init__(self, name, kind, args, timeout=None):
        self.name, self.kind, self.args, self.timeout = name, kind, args, timeout


def test_extra_arguments_are_quoted_at_the_end_by_default():
    r = resolve("tshell", ["x; touch /tmp/PWNED", "$(id)"], [T("tshell", "shell", ["echo"])])
    assert r.args == ["echo 'x; touch /tmp/PWNED' '$(id)'"]


def test_args_placeholder_puts_the_quoted_arguments_there():
    r = resolve("t", ["a b"], [T("t", "shell", ["grep -c {args} /etc/hostname"])])
    assert r.args == ["grep -c 'a b' /etc/hostname"]


def test_args_raw_is_the_explicit_way_to_pass_shell():
    r = resolve("t", ["x; id"], [T("t", "shell", ["echo {args_raw}"])])
    assert r.args == ["echo x; id"]


def test_braces_of_the_shell_itself_are_left_alone():
    r = resolve("t", ["f"], [T("t", "shell", ["awk '{print $1}' ${HOME}/x"])])
    assert r.args == ["awk '{print $1}' ${HOME}/x f"]


def _probe(tmp_path: Path, template: str, *args: str) -> subprocess.CompletedProcess:
    config = tmp_path / "c.toml"
    config.write_text(f"[[probes]]\nname = \"tshell\"\nkind = \"shell\"\nargs = ['{template}']\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "tui")}
    return subprocess.run([sys.executable, "-m", "perftriage", "--config", str(config),
                           "--sessions-dir", str(tmp_path / "s"), "probe", "tshell", *args],
                          capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)


def test_an_injection_through_a_shell_template_runs_nothing(tmp_path):
    r = _probe(tmp_path, "echo", "x; touch PWNED")
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "PWNED").exists()
    assert "x; touch PWNED" in r.stdout


def test_args_raw_runs_what_it_is_given(tmp_path):
    r = _probe(tmp_path, "echo {args_raw}", "x; touch MEANT")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "MEANT").exists()


def test_help_says_how_template_arguments_are_quoted():
    env = {**os.environ, "PYTHONPATH": str(REPO / "tui")}
    r = subprocess.run([sys.executable, "-m", "perftriage", "probe", "--help"],
                       capture_output=True, text=True, timeout=60, env=env)
    text = " ".join(r.stdout.split())
    assert "{args_raw}" in text and "quoted" in text, r.stdout
