"""A host without py-spy (issue 51 item 3): the stacks probe offers to carry
perftriage's own py-spy there, and with ``--carry`` does — a private temp
dir (0700, the SSH user's), checked by sha256 on the host, run, removed —
over the loopback sshd whose PATH has no py-spy, sampling the server on its
port. A carried file anyone else could have written or swapped never runs:
the host script refuses a wrong sha256, a directory that is not private, a
file others can write, another user's directory, a link."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.probe_kinds.kind import HostContext
from perftriage.core.probe_kinds.stacks_kind import STACKS_KIND, own_pyspy
from tests.reliability.test_stacks_hostile import FAKE_OK, NOBODY, SYSTEM_PATH, write_exe
from tests.support.two_servers import PYTHON, SERVER_STALL, running

pytestmark = pytest.mark.skipif(own_pyspy() is None, reason="py-spy is not installed")


@pytest.fixture(scope="module")
def servers():
    with running() as two:
        yield two


def _carried_dirs() -> set[str]:
    return {p.name for p in Path("/tmp").iterdir() if p.name.startswith("perftriage-carried-")}


@pytest.mark.ssh
def test_a_host_without_py_spy_gets_perftriages_own_carried(tmp_path, make_sshd, servers):
    server = make_sshd(env={"PATH": SYSTEM_PATH})
    conf = tmp_path / "config.toml"
    conf.write_text(f'[[hosts]]\nname = "gpu"\nssh = "{server.alias}"\npython = "{PYTHON}"\n')

    def probe(*args: str) -> tuple[int, str]:
        r = CliRunner().invoke(cli, ["--config", str(conf), "--ssh-config",
                                     str(server.ssh_config), "--host", "gpu", "probe", *args])
        return r.exit_code, r.output

    code, out = probe("stacks", "--port", str(servers.port), "--seconds", "1")
    assert code != 0 and "py-spy not found on the host: --carry carries perftriage's own" in out
    before = _carried_dirs()
    code, out = probe("--json", "stacks", "--port", str(servers.port), "--seconds", "2",
                      "--carry")
    assert code == 0, out
    doc = json.loads(out)
    pyspy = doc["detail"]["pyspy"]
    assert pyspy.startswith("/tmp/perftriage-carried-") and pyspy.endswith("/py-spy")
    assert doc["top"]["name"] == SERVER_STALL
    assert {p["pid"] for p in doc["processes"]} == {servers.server, servers.child}
    assert not os.path.exists(os.path.dirname(pyspy))  # removed after the probe
    assert _carried_dirs() <= before


def _planted(tmp_path: Path, how: str) -> tuple[Path, str, Path]:
    """A carried-like py-spy (a fake that writes MARKER when it runs), made
    unsafe in one way; (its path, the sha256 to send, the marker)."""
    marker = tmp_path / "MARKER"
    d = tmp_path / "carried"
    exe = write_exe(d / "py-spy", FAKE_OK % str(marker), mode=0o700)
    os.chmod(d, 0o700)
    sha = hashlib.sha256(exe.read_bytes()).hexdigest()
    if how == "wrong sha256":
        sha = "0" * 64
    elif how == "directory not private":
        os.chmod(d, 0o755)
    elif how == "file others can write":
        os.chmod(exe, 0o722)
    elif how == "another user's directory":
        os.chown(d, NOBODY, NOBODY)
    elif how == "a link to the directory":
        link = tmp_path / "link"
        link.symlink_to(d)
        exe = link / "py-spy"
    return exe, sha, marker


def _run(tmp_path: Path, exe: Path, sha: str, target: int) -> tuple[str, dict]:
    command = STACKS_KIND.build(["--server-pid", str(target), "--carry"],
                                HostContext(python=PYTHON, carried=(str(exe), sha)))
    r = subprocess.run(["bash", "-c", command], env={"PATH": SYSTEM_PATH}, capture_output=True,
                       text=True, timeout=120)
    v = STACKS_KIND.interpret(["--server-pid", str(target), "--carry"], r.returncode, r.stdout,
                              r.stderr)
    return v.status, {"summary": v.summary, **v.detail}


def test_a_carried_py_spy_with_the_right_hash_in_a_private_dir_runs(tmp_path, servers):
    exe, sha, marker = _planted(tmp_path, "as sent")
    status, detail = _run(tmp_path, exe, sha, servers.server)
    assert marker.exists() and status == "ok", detail["summary"]
    assert detail["pyspy"] == str(exe) and detail["top"]["name"] == "fake_leaf"
    assert not exe.parent.exists()  # the script removes the carried dir


REFUSED = {
    "wrong sha256": "sha256",
    "directory not private": "is not a private directory",
    "file others can write": "is not a regular file of",
    "another user's directory": "is not a private directory",
    "a link to the directory": "is not a private directory",
}


@pytest.mark.parametrize("how", list(REFUSED))
def test_a_carried_py_spy_anyone_else_could_have_written_never_runs(tmp_path, servers, how):
    if how == "another user's directory" and os.geteuid() != 0:
        pytest.skip("chown to nobody needs root")
    exe, sha, marker = _planted(tmp_path, how)
    status, detail = _run(tmp_path, exe, sha, servers.server)
    assert not marker.exists(), "the carried py-spy ran"
    assert status == "failed" and REFUSED[how] in detail["summary"], detail["summary"]
