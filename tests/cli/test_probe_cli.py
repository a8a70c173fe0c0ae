"""`perftriage probe`: exit codes and JSON fields (a public interface)."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

from perftriage.cli import cli

FIELDS = {"host", "kind", "args", "verdict", "exit_status", "duration_s", "stdout", "stderr",
          "detail"}


def _config(tmp_path, extra: str = "") -> str:
    path = tmp_path / "config.toml"
    path.write_text(
        f'[[hosts]]\nname = "localhost"\npython = "{sys.executable}"\n\n'
        '[[probes]]\nname = "json-dumps"\nkind = "import"\nargs = ["json:dumps"]\n' + extra
    )
    return str(path)


def invoke(tmp_path, *args, extra: str = ""):
    return CliRunner().invoke(cli, ["--config", _config(tmp_path, extra), "probe", *args])


def test_ok_json_has_exactly_the_documented_fields(tmp_path):
    r = invoke(tmp_path, "--json", "import", "click")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert set(data) == FIELDS
    assert (data["host"], data["kind"], data["args"], data["verdict"]) == (
        "localhost", "import", ["click"], "ok")
    assert data["exit_status"] == 0 and data["duration_s"] > 0
    assert data["detail"]["file"].endswith("__init__.py")


def test_failed_probe_exits_1_with_the_error(tmp_path):
    r = invoke(tmp_path, "--json", "import", "flashinfer_nope.jit.cutedsl")
    assert r.exit_code == 1
    data = json.loads(r.output)
    assert data["verdict"] == "failed"
    assert data["detail"]["error"] == "ModuleNotFoundError"
    assert "No module named 'flashinfer_nope'" in data["stderr"]


def test_text_output_and_template(tmp_path):
    r = invoke(tmp_path, "json-dumps")
    assert r.exit_code == 0
    assert r.output.startswith("localhost") and " ok " in r.output


@pytest.mark.parametrize("argv", [
    ["nope", "x"],                  # unknown kind
    ["grep", "only-pattern"],       # missing argument
    ["http", "ftp://127.0.0.1/"],   # not http
    ["--host", "a", "--all", "import", "json"],
    ["--host", "bad spec with spaces", "import", "json"],
    [],
])
def test_usage_errors_exit_2(tmp_path, argv):
    r = invoke(tmp_path, *argv)
    assert r.exit_code == 2, r.output


def test_timeout_exits_4(tmp_path):
    r = invoke(tmp_path, "--json", "--timeout", "0.3", "shell", "sleep 5")
    assert r.exit_code == 4
    assert json.loads(r.output)["verdict"] == "timeout"


def test_unreachable_host_exits_3(tmp_path):
    r = invoke(tmp_path, "--json", "--host", "nobody@127.0.0.1:1", "import", "json")
    assert r.exit_code == 3, r.output
    data = json.loads(r.output)
    assert data["verdict"] == "error" and data["host"] == "nobody@127.0.0.1:1"


def test_all_prints_a_list_one_per_host(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "fakemod_cli.py").write_text("")
    extra = (f'\n[[hosts]]\nname = "venv-b"\npython = "{sys.executable}"\n'
             f'preamble = "export PYTHONPATH={site}"\n')
    r = invoke(tmp_path, "--all", "--json", "import", "fakemod_cli", extra=extra)
    assert r.exit_code == 1  # failed on localhost
    data = json.loads(r.output)
    assert [(d["host"], d["verdict"]) for d in data] == [("localhost", "failed"),
                                                         ("venv-b", "ok")]
    assert all(set(d) == FIELDS for d in data)


@pytest.mark.ssh
def test_over_ssh_with_the_hosts_ssh_config(tmp_path, sshd):
    r = CliRunner().invoke(cli, ["--config", _config(tmp_path), "--ssh-config",
                                 str(sshd.ssh_config), "probe", "--host", sshd.alias, "--json",
                                 "shell", "echo over-ssh"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["host"] == sshd.alias and data["stdout"] == "over-ssh\n"


def test_text_output_shows_the_answer_the_output_view_shows():
    """One rendering of an answer: the CLI's lines under the result are the
    output view's, indented; a failure's stderr adds only what they lack."""
    from perftriage.cli.commands.probe import _body
    from perftriage.core.model.state import ProbeState
    from perftriage.core.probes import answer_lines

    p = ProbeState(probe_id="p1", host="gpu-a", kind="import", args=["flashinfer"],
                   status="failed", detail={"ok": False, "error": "ModuleNotFoundError",
                                            "message": "No module named 'flashinfer'"},
                   stderr="Traceback (most recent call last):\n  File \"<string>\", line 9\n"
                          "  File \"/x/a.py\", line 3\n    import flashinfer\n"
                          "ModuleNotFoundError: No module named 'flashinfer'\n")
    body = _body(p)
    assert body[:len(answer_lines(p))] == [f"    {x}" for x in answer_lines(p)]
    assert body[0] == "    ModuleNotFoundError: No module named 'flashinfer'"
    assert body[-2:] == ["    stderr: Traceback (most recent call last):",
                         '    stderr:   File "<string>", line 9']
    assert sum("No module named" in line for line in body) == 1


def test_help_lists_every_kind_from_the_kind_itself():
    from perftriage.core import probes

    r = CliRunner().invoke(cli, ["probe", "--help"], terminal_width=100)
    assert r.exit_code == 0
    text = " ".join(r.output.split())
    for kind in probes.KINDS.values():
        assert " ".join(kind.usage.split()) in text, kind.name
    assert "a [[probes]] template name" in text
