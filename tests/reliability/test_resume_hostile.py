"""Continuing a crafted investigation (``perftriage -s
NAME``) with no key pressed re-opened every file its ``log.opened`` events
named (a credentials file and a shell history were copied into the new
transcript), read the engine URL it named and opened an SSH connection to a
host it named. Now only what the user's config or command line names starts;
the rest is listed, and ``O`` re-opens what passes the rules for a file named
by a recording (a regular file, no link, no secrets path)."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from perftriage.core import follow_rules
from perftriage.core.model import events as ev
from perftriage.core.store import config as config_mod
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry, local_host
from perftriage.services.investigation.named import open_investigation
from tests.support.helpers import capture_notifications, wait_for
from tests.support.metrics_server import MetricsServer

SECRET = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
HISTORY = "mysql -u root -phunter2-in-history"
DECODE = ("[2026-11-28 10:00:01 TP0] Decode batch, #running-req: 8, #token: 900, token usage: "
          "0.10, cuda graph: True, gen throughput (token/s): 411.00, #queue-req: 0\n")


class Listener:
    """A TCP port on 127.0.0.1 that counts the connections made to it (an
    SSH client connecting is one, whatever happens after)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


def _files(tmp_path: Path) -> dict[str, Path]:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(f"[default]\n{SECRET}\n")
    (home / ".bash_history").write_text(HISTORY + "\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "server.log").write_text("ssh-dir line\n")
    (home / "logs").symlink_to(home / ".ssh")  # a link in a parent directory
    (home / "server.log").write_text(DECODE)
    (home / "current.log").symlink_to(home / ".bash_history")  # a link as the file itself
    return {"credentials": home / ".aws" / "credentials", "history": home / ".bash_history",
            "via_dir_link": home / "logs" / "server.log", "link": home / "current.log",
            "log": home / "server.log"}


def _craft(tmp_path: Path, files: dict[str, Path], engine_url: str, ssh_host: str) -> None:
    """The first run of investigation ``shared``: what a hostile colleague's
    file records (events written as a run of the cockpit writes them)."""
    session = open_investigation("shared", tmp_path / "sessions", ["localhost"])
    for i, path in enumerate(files.values(), 1):
        session.emit(ev.LogSourceOpened(source_id=f"log{i}", host="localhost", path=str(path)))
    session.emit(ev.CockpitAdded(what="engine", value=engine_url, host="localhost"))
    session.emit(ev.CockpitAdded(what="host", value=ssh_host))
    session.close()


def _continue(tmp_path: Path) -> Cockpit:
    reg = HostRegistry()
    reg.add(local_host())
    session = open_investigation("shared", tmp_path / "sessions", reg.names)
    return Cockpit(config_mod.Config(), registry=reg, session=session, sample_interval=0.2)


def test_the_rules_for_a_file_a_recording_names() -> None:
    refused = ["/home/u/.aws/credentials", "/root/.bash_history", "/home/u/.zsh_history",
               "/home/u/.ssh/id_ed25519", "/home/u/.netrc", "/etc/shadow", "/proc/1/environ",
               "/srv/app/.env", "/home/u/.docker/config.json", "/var/log/../../etc/passwd",
               "var/log/x.log", "/home/u/.config/gcloud/access_tokens.db", "/x/tls.key"]
    for path in refused:
        assert follow_rules.path_refusal(path) is not None, path
    for path in ["/var/log/sglang/server.log", "/tmp/run-3/vllm.log", "/root/sglang.log"]:
        assert follow_rules.path_refusal(path) is None, path
    assert follow_rules.type_refusal("/a.log", "symbolic link\n/b.log\n") == "it is a symbolic link"
    assert "not a regular file (fifo)" in follow_rules.type_refusal("/a.log", "fifo\n/a.log\n")
    assert follow_rules.type_refusal("/a.log", "regular file\n/a.log\n") is None
    assert "'.ssh'" in follow_rules.type_refusal("/l/a.log", "regular file\n/h/.ssh/a.log\n")


async def test_continuing_a_crafted_investigation_opens_nothing_until_asked(tmp_path):
    files = _files(tmp_path)
    ssh = Listener()
    with MetricsServer("sglang:num_running_reqs 1\n") as server:
        _craft(tmp_path, files, server.url, f"root@127.0.0.1:{ssh.port}")
        cockpit = _continue(tmp_path)
        await cockpit.start()
        try:
            listed = {(r.what, r.value) for r in cockpit.recorded_only}
            assert listed == {("log", str(p)) for p in files.values()} | {
                ("engine", server.url), ("host", f"root@127.0.0.1:{ssh.port}")}
            # nothing opened, read or connected to
            assert cockpit.logs.sources == {}
            assert not [s for s in cockpit.sources if s.name.startswith("engine")]
            assert cockpit.registry.names == ["localhost"]
            assert server.requests == 0 and ssh.accepted == 0
            notes = [n.text for n in cockpit.session.state.notes]
            assert any(t.startswith("not re-opened, named only by the recording (7; O re-opens")
                       for t in notes)

            said = await cockpit.reopen_recorded()  # the O key
            state = cockpit.session.state
            followed = {s.path for s in cockpit.logs.sources.values()}
            assert followed == {str(files["log"])}

            def why(path: Path) -> str:
                prefix = f"not followed: log localhost:{path}: "
                return next(ln[len(prefix):] for ln in said if ln.startswith(prefix))

            assert why(files["credentials"]).startswith("it is inside a '.aws' directory")
            assert why(files["history"]).startswith("its name matches '*_history'")
            assert why(files["link"]) == "it is a symbolic link"
            assert why(files["via_dir_link"]).startswith(
                f"its real path '{files['via_dir_link'].parent.parent / '.ssh' / 'server.log'}'")
            await wait_for(lambda: server.requests > 0, timeout=20)  # asked for: read
            await wait_for(lambda: ssh.accepted > 0, timeout=20)  # asked for: connected
            await wait_for(lambda: any(s.path == str(files["log"]) and s.total_lines == 1
                                       for s in state.logs.values()), timeout=20)
        finally:
            await cockpit.stop()
            ssh.close()
    written = cockpit.session.path.read_text()
    assert "wJalrXUtnFEMI" not in written and "hunter2" not in written
    assert "gen throughput" in written  # the log that passed was followed


async def test_a_configured_log_still_opens_with_the_cockpit(tmp_path):
    """The user's own config names the log: it is followed on a continue
    without a key (what the rule for recordings must not take away)."""
    files = _files(tmp_path)
    _craft(tmp_path, {"log": files["log"]}, "http://127.0.0.1:9/metrics", "evil.invalid")
    reg = HostRegistry()
    reg.add(local_host(config_mod.HostConfig(name="localhost", logs=[str(files["log"])])))
    session = open_investigation("shared", tmp_path / "sessions", reg.names)
    cockpit = Cockpit(config_mod.Config(), registry=reg, session=session, sample_interval=0.2)
    await cockpit.start()
    try:
        assert {s.path for s in cockpit.logs.sources.values()} == {str(files["log"])}
        assert {r.what for r in cockpit.recorded_only} == {"engine", "host"}
    finally:
        await cockpit.stop()


@pytest.mark.parametrize("size", [(160, 45)])
async def test_the_cockpit_lists_them_and_o_reopens(tmp_path, size):
    from perftriage.ui.app import PerftriageApp

    files = _files(tmp_path)
    _craft(tmp_path, {"credentials": files["credentials"], "log": files["log"]},
           "http://127.0.0.1:9/metrics", "evil.invalid")
    cockpit = _continue(tmp_path)
    app = PerftriageApp(cockpit)
    said = capture_notifications(app)
    async with app.run_test(size=size) as pilot:
        await wait_for(lambda: any("named only by the recording" in m for m, _ in said),
                       timeout=30)
        listed = next(m for m, _ in said if "named only by the recording" in m)
        assert f"log localhost:{files['credentials']}" in listed and "host evil.invalid" in listed
        assert cockpit.logs.sources == {}
        await pilot.press("O")
        await wait_for(lambda: any(m.startswith("re-opened: log") for m, _ in said), timeout=30)
        assert any(m.startswith("not followed: log") and ".aws" in m for m, _ in said)
        assert {s.path for s in cockpit.logs.sources.values()} == {str(files["log"])}
        await pilot.press("q")
    assert "wJalrXUtnFEMI" not in cockpit.session.path.read_text()
