"""The fault matrix over the loopback sshd: the real app runs with two
SSH hosts, ``good`` and ``bad``; each case breaks ``bad`` one way and checks
that the app is still alive, that ``good`` is unaffected (new samples keep
coming, a probe on it answers), and that ``bad`` says why, in one line.

Cases: killed mid-probe, killed mid-stream, SIGSTOP stall, host key changed,
authentication failure, connection refused, name not resolved (a
``.invalid`` name: no DNS server is asked for it), disk full (the sessions
directory on a small tmpfs; root only).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.support.helpers import FAKE_NVIDIA_SMI_DIR, wait_for
from tests.reliability.test_orphans import session_sshds
from tests.support.sshd import free_port, keygen

from perftriage.ui.app import PerftriageApp
from perftriage.core.store.config import HostConfig
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry, make_host
from perftriage.transport.ssh_options import SshOptions

pytestmark = pytest.mark.ssh

FAKE_DIR = FAKE_NVIDIA_SMI_DIR
PREAMBLE = f"export PATH={FAKE_DIR}:$PATH"


def ssh_cfg(name: str, target: str) -> HostConfig:
    return HostConfig(name=name, ssh=target, preamble=PREAMBLE, connect_timeout=5,
                      keepalive_interval=2)


@asynccontextmanager
async def running_app(tmp_path: Path, good, bad_cfg: HostConfig, ssh_config, sessions_dir=None):
    reg = HostRegistry()
    reg.add(make_host(ssh_cfg("good", good.alias), SshOptions(config=good.ssh_config)))
    reg.add(make_host(bad_cfg, SshOptions(config=ssh_config)))
    cockpit = Cockpit(registry=reg, sessions_dir=sessions_dir or tmp_path / "sessions",
                      sample_interval=0.3)
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 50)) as pilot:
        yield app, pilot


def good_sample_t(app) -> float:
    return app.session.state.hosts["good"].sample_t or 0.0


async def assert_alive_and_good_unaffected(app, pilot) -> None:
    """The app answers keys; ``good`` keeps sampling and answers a probe."""
    before = good_sample_t(app)
    await pilot.press("tab")
    await pilot.pause()
    assert app.is_running and app.return_code is None
    await wait_for(lambda: good_sample_t(app) > before, timeout=20)
    probes = app.cockpit.probes
    pid = probes.enqueue("good", "shell", ["echo still-good"], timeout=20)
    await probes.wait(pid)
    p = app.session.state.probes[pid]
    assert (p.status, p.stdout) == ("ok", "still-good\n"), (p.status, p.summary)


def bad_state(app):
    return app.session.state.hosts["bad"]


async def bad_probe(app, command: str = "echo hi", timeout: float = 5.0):
    pid = app.cockpit.probes.enqueue("bad", "shell", [command], timeout=timeout)
    await app.cockpit.probes.wait(pid)
    return app.session.state.probes[pid]


def one_line(text: str | None) -> bool:
    return bool(text) and "\n" not in text


# --- the connection is cut or stalls --------------------------------------------------


async def test_killed_mid_probe(make_sshd, tmp_path):
    good, bad = make_sshd(), make_sshd()
    async with running_app(tmp_path, good, ssh_cfg("bad", bad.alias), bad.ssh_config) as (app, pilot):
        await wait_for(lambda: good_sample_t(app) and bad_state(app).sample_t, timeout=30)
        pid = app.cockpit.probes.enqueue("bad", "shell", ["sleep 60"], timeout=90)
        await wait_for(lambda: app.session.state.probes[pid].status == "running", timeout=20)
        await asyncio.sleep(0.5)
        for sshd_pid in session_sshds(bad):  # the connection dies under the probe
            os.kill(sshd_pid, signal.SIGKILL)
        await app.cockpit.probes.wait(pid)
        p = app.session.state.probes[pid]
        assert p.status == "error" and one_line(p.summary) and "lost" in p.summary
        await assert_alive_and_good_unaffected(app, pilot)
        # bad comes back by itself (its sshd still listens)
        await wait_for(lambda: bad_state(app).conn_state == "up", timeout=30)
        assert (await bad_probe(app)).status == "ok"


async def test_killed_mid_stream(make_sshd, tmp_path):
    good, bad = make_sshd(), make_sshd()
    log = tmp_path / "bad.log"
    log.write_text("before\n")
    async with running_app(tmp_path, good, ssh_cfg("bad", bad.alias), bad.ssh_config) as (app, pilot):
        sid = app.cockpit.logs.open_file("bad", str(log))
        src = lambda: app.session.state.logs[sid]  # noqa: E731
        await wait_for(lambda: list(src().lines) == ["before"], timeout=30)
        await wait_for(lambda: bad_state(app).sample_t, timeout=30)
        for sshd_pid in session_sshds(bad):  # streams (log, nvidia-smi, /proc) die
            os.kill(sshd_pid, signal.SIGKILL)
        with open(log, "a") as fh:
            fh.write("during\n")
        await assert_alive_and_good_unaffected(app, pilot)
        await wait_for(lambda: list(src().lines) == ["before", "during"], timeout=40)
        assert src().open and src().follow == "following"
        t = bad_state(app).sample_t
        await wait_for(lambda: (bad_state(app).sample_t or 0) > t, timeout=40)  # GPU/proc resume


async def test_sigstop_stall(make_sshd, tmp_path):
    good, bad = make_sshd(), make_sshd()
    async with running_app(tmp_path, good, ssh_cfg("bad", bad.alias), bad.ssh_config) as (app, pilot):
        await wait_for(lambda: good_sample_t(app) and bad_state(app).sample_t, timeout=30)
        # the whole host stalls: its listener too, or a reconnect would be served fresh
        stopped = [bad.proc.pid, *session_sshds(bad)]
        for sshd_pid in stopped:
            os.kill(sshd_pid, signal.SIGSTOP)
        try:
            p = await bad_probe(app, timeout=2)
            assert p.status in ("timeout", "error") and one_line(p.summary), (p.status, p.summary)
            await assert_alive_and_good_unaffected(app, pilot)
            # the stalled host is seen as such (keepalive or no samples), not as up and fine
            await wait_for(lambda: bad_state(app).conn_state != "up"
                           or (bad_state(app).sample is not None
                               and bad_state(app).sample.gpu_age_s is not None), timeout=30)
        finally:
            for sshd_pid in stopped:
                os.kill(sshd_pid, signal.SIGCONT)


# --- the host cannot be reached at all --------------------------------------------------


def host_key_changed(server) -> None:
    other = keygen(server.root / "other_host_key")
    algo, blob = Path(f"{other}.pub").read_text().split()[:2]
    server.known_hosts.write_text(f"[{server.host}]:{server.port} {algo} {blob}\n")


def auth_refused(server) -> None:
    stranger = keygen(server.root / "stranger")
    server.authorized_keys.write_text(Path(f"{stranger}.pub").read_text())


UNREACHABLE = {
    "host_key_changed": (host_key_changed, "HOST KEY CHANGED", "down"),
    "auth_failure": (auth_refused, "authentication failed", "down"),
}


@pytest.mark.parametrize("case", sorted(UNREACHABLE))
async def test_unreachable_by_policy(make_sshd, tmp_path, case):
    break_it, says, state = UNREACHABLE[case]
    good, bad = make_sshd(), make_sshd()
    break_it(bad)
    async with running_app(tmp_path, good, ssh_cfg("bad", bad.alias), bad.ssh_config) as (app, pilot):
        await wait_for(lambda: bad_state(app).conn_state == state, timeout=30)
        assert says in bad_state(app).reason and one_line(bad_state(app).reason)
        p = await bad_probe(app)
        assert p.status == "error" and says in p.summary
        await assert_alive_and_good_unaffected(app, pilot)


@pytest.mark.parametrize("case", ["refused", "name_not_resolved"])
async def test_unreachable_by_network(make_sshd, tmp_path, case):
    good = make_sshd()
    target = f"127.0.0.1:{free_port()}" if case == "refused" else "gpu-node.invalid"
    says = "connection refused" if case == "refused" else "name not resolved"
    async with running_app(tmp_path, good, ssh_cfg("bad", target), good.ssh_config) as (app, pilot):
        await wait_for(lambda: says in (bad_state(app).reason or ""), timeout=30)
        assert bad_state(app).conn_state == "retrying" and one_line(bad_state(app).reason)
        p = await bad_probe(app)
        assert p.status == "error" and says in p.summary
        await assert_alive_and_good_unaffected(app, pilot)


# --- the disk is full ----------------------------------------------------------------------


@pytest.fixture
def small_tmpfs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(mnt)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


async def test_disk_full(make_sshd, tmp_path, small_tmpfs):
    good, bad = make_sshd(), make_sshd()
    async with running_app(tmp_path, good, ssh_cfg("bad", bad.alias), bad.ssh_config,
                           sessions_dir=small_tmpfs / "sessions") as (app, pilot):
        await wait_for(lambda: good_sample_t(app) and bad_state(app).sample_t, timeout=30)
        with open(small_tmpfs / "filler", "wb", buffering=0) as fh:  # no room left for the transcript
            with pytest.raises(OSError):
                while True:
                    fh.write(b"\0" * 65536)
        await wait_for(lambda: any("No space left" in n.text for n in app.session.state.notes),
                       timeout=30)
        await assert_alive_and_good_unaffected(app, pilot)
        assert (await bad_probe(app)).status == "ok"
    assert app.return_code in (None, 0)
