from __future__ import annotations

import os
import shlex

import pytest

from tests.support.prometheus import PrometheusServer, prometheus_available
from tests.support.sshd import SshServer, sshd_available



def _require_sshd() -> None:
    if sshd_available():
        return
    if os.environ.get("CI") == "true":
        pytest.fail("OpenSSH sshd is missing; CI must install openssh-server (see README)")
    pytest.skip("OpenSSH sshd not installed (run the README's test command)")


def pytest_collection_modifyitems(items) -> None:
    """Tests marked ``slow_first`` (the wheel in a fresh venv) go first: under
    xdist they then run beside the others instead of alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow_first") is None)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory) -> SshServer:
    """One loopback sshd shared by the whole test session (read-only use)."""
    _require_sshd()
    # logins get a HOME of their own (see SshServer): never this machine's ~/.bashrc
    server = SshServer(tmp_path_factory.mktemp("sshd")).start()
    yield server
    server.stop()


@pytest.fixture
def make_sshd(tmp_path):
    """Factory for a private sshd (to restart, break, or give a slow rc file)."""
    _require_sshd()
    servers: list[SshServer] = []

    def make(**kwargs) -> SshServer:
        server = SshServer(tmp_path / f"sshd{len(servers)}", **kwargs).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def quiet_sshd(make_sshd, tmp_path):
    """A dedicated sshd (MaxStartups 100:30:200, see tests/support/sshd.py) whose
    sessions get an empty HOME: 64 simultaneous logins then do not each run
    this machine's ~/.bashrc (pyenv init, which serialises on a lock file)."""
    home = tmp_path / "empty-home"
    home.mkdir()
    return make_sshd(env={"HOME": str(home)})


# The outliers planted in the emulated fleet that `prometheus_fleet` scrapes.
FLEET_OUTLIERS = ["node003:3:DCGM_FI_PROF_DRAM_ACTIVE=0.31", "node007::sglang:gen_throughput=300"]


@pytest.fixture(scope="session")
def prometheus_fleet(tmp_path_factory) -> PrometheusServer:
    """A real Prometheus scraping 16 emulated hosts x 8 GPUs (dcgm-exporter and
    SGLang) with two planted outliers (FLEET_OUTLIERS)."""
    if not prometheus_available():
        if os.environ.get("CI") == "true":
            pytest.fail("prometheus is missing; CI must install it (scripts/test does)")
        pytest.skip("prometheus not installed (run scripts/test)")
    server = PrometheusServer(tmp_path_factory.mktemp("prometheus"), hosts=16, gpus=8,
                              outliers=FLEET_OUTLIERS).start()
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(autouse=True)
def _steady_cursors(monkeypatch):
    """Text cursors do not blink in tests: a snapshot taken under load could
    catch the off half of a blink (test_gap_view_snapshot_fast_phase did)."""
    from textual.widgets import Input, TextArea

    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)
    monkeypatch.setattr(TextArea, "_toggle_cursor_blink_visible", lambda self: None)


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path, monkeypatch):
    """Never touch the real user config or data dirs from a test."""
    monkeypatch.setenv("PERFTRIAGE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("PERFTRIAGE_SESSIONS_DIR", str(tmp_path / "sessions"))
