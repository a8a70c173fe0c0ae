"""The stacks probe samples the server behind the URL (issues 47 item 4, 49
item 1): with two SGLang-named processes on one host — the server listening
on a port, with its scheduler child, and a busier decoy of another user
(``nobody`` when root) — ``--port`` and ``--server-pid`` read the server's
tree and only it; the default pattern never reads another user's process;
a port nothing listens on samples nothing and says so. Locally and over the
loopback sshd, with a real py-spy (the package's dependency)."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.probe_kinds.stacks_kind import own_pyspy
from tests.support.two_servers import DECOY_STALL, SERVER_STALL, running

pytestmark = pytest.mark.skipif(own_pyspy() is None, reason="py-spy is not installed")


@pytest.fixture(scope="module")
def servers():
    with running() as two:
        yield two


def _probe(tmp_path: Path, *args: str, ssh=None):
    conf = tmp_path / "config.toml"
    text = f'[[hosts]]\nname = "localhost"\npython = "{sys.executable}"\n'
    head: list[str] = []
    if ssh is not None:
        text += f'\n[[hosts]]\nname = "gpu"\nssh = "{ssh.alias}"\npython = "{sys.executable}"\n'
        head = ["--ssh-config", str(ssh.ssh_config), "--host", "gpu"]
    conf.write_text(text)
    r = CliRunner().invoke(cli, ["--config", str(conf), *head, "probe", *args])
    return r.exit_code, r.output


def _pids(out: str) -> dict[int, dict]:
    return {p["pid"]: p for p in json.loads(out)["processes"]}


def _check_server_tree(code: int, out: str, servers) -> None:
    assert code == 0, out
    procs = _pids(out)
    assert set(procs) == {servers.server, servers.child}, out
    assert servers.decoy not in procs
    top = json.loads(out)["top"]
    assert top["name"] == SERVER_STALL and top["pid"] == servers.child
    assert DECOY_STALL not in out


def test_port_samples_the_listening_server_and_its_children(tmp_path, servers):
    code, out = _probe(tmp_path, "--json", "stacks", "--port", str(servers.port),
                       "--seconds", "2")
    _check_server_tree(code, out, servers)
    server = json.loads(out)["detail"]["server"]
    assert (server["pid"], server["port"], server["tree"]) == (servers.server, servers.port, 2)
    code, out = _probe(tmp_path, "stacks", "--port", str(servers.port), "--seconds", "1")
    assert f"server pid {servers.server} on port {servers.port} and its tree" in out


def test_server_pid_samples_that_tree(tmp_path, servers):
    code, out = _probe(tmp_path, "--json", "stacks", "--server-pid", str(servers.server),
                       "--seconds", "2")
    _check_server_tree(code, out, servers)


def test_a_port_nothing_listens_on_samples_nothing(tmp_path, servers):
    with socket.socket() as s:  # a port that was free a moment ago
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out = _probe(tmp_path, "--json", "stacks", "--port", str(port), "--seconds", "1")
    assert code == 1, out
    doc = json.loads(out)
    assert doc["verdict"] == "no-match"
    assert doc["processes"] == [] and doc["top"] is None
    code, out = _probe(tmp_path, "stacks", "--port", str(port), "--seconds", "1")
    assert f"no process listens on port {port} on the host: nothing sampled" in out


def test_the_default_pattern_leaves_another_users_process_out(tmp_path, servers):
    if not servers.decoy_user:
        pytest.skip("needs root to run the decoy as another user")
    code, out = _probe(tmp_path, "--json", "stacks")  # one dump of whatever matches
    assert servers.decoy not in _pids(out)
    assert DECOY_STALL not in out
    assert servers.server in _pids(out), out  # ours, by the same name, is read
    others = json.loads(out)["detail"]["others"]
    assert [servers.decoy, "uid 65534 (nobody)"] in [[o[0], o[2]] for o in others]
    code, out = _probe(tmp_path, "stacks")
    assert "of another user left out (pid " in out and DECOY_STALL not in out
    code, out = _probe(tmp_path, "--json", "stacks", "--match", servers.tag)  # both hold it
    assert code == 0, out
    assert set(_pids(out)) == {servers.server, servers.child}
    assert [servers.decoy] == [o[0] for o in json.loads(out)["detail"]["others"]]
    code, out = _probe(tmp_path, "stacks", "--pid", str(servers.decoy))  # named: read, said
    assert code == 0, out
    assert f"pid {servers.decoy} is uid 65534 (nobody)'s process, not the probe user's" in out


@pytest.mark.ssh
def test_port_over_the_loopback_sshd(tmp_path, sshd, servers):
    code, out = _probe(tmp_path, "--json", "stacks", "--port", str(servers.port),
                       "--seconds", "2", ssh=sshd)
    _check_server_tree(code, out, servers)
    assert json.loads(out)["host"] == "gpu"
