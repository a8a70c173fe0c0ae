"""Server launcher: readiness, failed start, quoting, stop kills the process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.support.helpers import wait_for
from perftriage.core.model import events as ev
from perftriage.core.store.config import ServerProfile
from perftriage.services.hosts.registry import HostRegistry, local_host
from perftriage.services.logs.follower import LogFollower
from perftriage.services.logs.server_launcher import (
    LaunchError,
    ServerLauncher,
    build_command,
    parse_overrides,
    render,
)
from perftriage.services.investigation.session import Session
from perftriage.transport.ssh_options import SshOptions

SIM = f"{sys.executable} -m perftriage.simulator.sglang_sim --startup-s {{startup}} --rate {{rate}}"


def launcher(tmp_path, *profiles: ServerProfile) -> tuple[Session, ServerLauncher]:
    reg = HostRegistry()
    reg.add(local_host())
    session = Session(sessions_dir=tmp_path / "sessions")
    return session, ServerLauncher(session, LogFollower(session, reg), list(profiles))


def server_events(session: Session, name: str) -> list[ev.ServerEvent]:
    return [e for e in session.state.server_events if e.server == name]


def sims_running(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-ewwo", "pid,args"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if "sglang_sim" in ln and marker in ln]


def test_render_quotes_values() -> None:
    cmd = render("serve --model {model} --tp {tp}", {"model": "a b; rm -rf /", "tp": "8"})
    assert cmd == "serve --model 'a b; rm -rf /' --tp 8"
    with pytest.raises(LaunchError, match="tp"):
        render("serve --tp {tp}", {})
    values, extra = parse_overrides("tp=4 --moe-runner-backend flashinfer_cutedsl x=1", ["tp"])
    assert values == {"tp": "4"} and extra == ["--moe-runner-backend", "flashinfer_cutedsl", "x=1"]
    p = ServerProfile(name="s", command="serve --tp {tp}", args={"tp": "8"}, workdir="/w d",
                      log="/tmp/x y.log")
    assert build_command(p, {"tp": "2"}, ["--flag", "$(boom)"]) == (
        "{ cd '/w d' && serve --tp 2 --flag '$(boom)' ; } 2>&1 | "
        "{ trap '' TERM; exec tee -a '/tmp/x y.log'; }; "
        'exit "${PIPESTATUS[0]}"')


async def test_ready_then_stop_kills_server(tmp_path) -> None:
    log = tmp_path / "server.log"
    profile = ServerProfile(name="sim", command=SIM + " --seed 11", log=str(log),
                            args={"startup": "0.05", "rate": "50"})
    session, servers = launcher(tmp_path, profile)
    run = servers.start("sim", "--error-every 0")
    await wait_for(lambda: run.state == "ready")
    ready = server_events(session, "sim")[-1]
    assert ready.state == "ready" and ready.time_to_ready_s is not None
    assert "fired up" in ready.detail
    src = session.state.logs[run.source_id]
    assert src.kind == "server"
    await wait_for(lambda: len(src.metrics.gen_tps) >= 3)
    assert sims_running("--seed 11")
    assert run.guard_pid is not None
    await servers.stop("sim")
    assert server_events(session, "sim")[-1].state == "stopped"
    await wait_for(lambda: not sims_running("--seed 11"), timeout=5)
    assert "fired up" in log.read_text()  # the output was also appended to the log file
    assert "shutting down gracefully" in log.read_text()  # SIGTERM came first, not SIGKILL
    session.close()


async def test_failed_start_reports_last_lines(tmp_path) -> None:
    profile = ServerProfile(name="bad", command=SIM + " --fail",
                            args={"startup": "0.01", "rate": "10"})
    session, servers = launcher(tmp_path, profile)
    servers.start("bad")
    await wait_for(lambda: server_events(session, "bad")[-1].state == "failed")
    failed = server_events(session, "bad")[-1]
    assert "Traceback" in failed.detail or "out of memory" in failed.detail
    assert any("server_args" in ln for ln in failed.last_lines)
    await servers.stop_all()
    session.close()


async def test_exit_before_ready_is_failed(tmp_path) -> None:
    profile = ServerProfile(name="quick", command="echo starting; exit 3")
    session, servers = launcher(tmp_path, profile)
    servers.start("quick")
    await wait_for(lambda: server_events(session, "quick")[-1].state == "failed")
    failed = server_events(session, "quick")[-1]
    assert "exit status 3" in failed.detail and "starting" in failed.last_lines
    with pytest.raises(LaunchError, match="unknown server"):
        servers.start("nope")
    session.close()


async def test_exit_status_is_the_servers_not_tees(tmp_path) -> None:
    log = tmp_path / "quick.log"
    profile = ServerProfile(name="quick", command="echo starting; exit 7", log=str(log))
    session, servers = launcher(tmp_path, profile)
    servers.start("quick")
    await wait_for(lambda: server_events(session, "quick")[-1].state == "failed")
    assert "exit status 7" in server_events(session, "quick")[-1].detail
    assert "starting" in log.read_text()
    session.close()


async def test_health_url_readiness(tmp_path) -> None:
    import http.server
    import threading

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.end_headers()

        def log_message(self, *a):
            return None

    srv = http.server.HTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        profile = ServerProfile(name="h", command="sleep 30",
                                health_url=f"http://127.0.0.1:{srv.server_port}/health")
        session, servers = launcher(tmp_path, profile)
        run = servers.start("h")
        await wait_for(lambda: run.state == "ready")
        assert "answered 200" in server_events(session, "h")[-1].detail
        await servers.stop_all()
        session.close()
    finally:
        srv.shutdown()


@pytest.mark.ssh
async def test_simulator_launched_over_ssh_is_ready_and_stops_cleanly(sshd, tmp_path) -> None:
    """The same simulator through the real SSH path: start, ready, metrics, stop."""
    from perftriage.core.store.config import HostConfig
    from perftriage.services.hosts.registry import Host
    from perftriage.transport.ssh import SSHTransport

    cfg = HostConfig(name="gpu-sim", ssh=sshd.alias)
    transport = SSHTransport.from_config(cfg, SshOptions(config=sshd.ssh_config))
    reg = HostRegistry()
    reg.add(Host("gpu-sim", cfg, transport))
    session = Session(sessions_dir=tmp_path / "sessions")
    profile = ServerProfile(name="sim", host="gpu-sim", command=SIM + " --seed 23",
                            log=str(tmp_path / "remote server.log"),
                            args={"startup": "0.05", "rate": "50"}, workdir=str(tmp_path))
    servers = ServerLauncher(session, LogFollower(session, reg), [profile])
    try:
        run = servers.start("sim", "--error-every 0")
        await wait_for(lambda: run.state == "ready", timeout=20)
        ready = server_events(session, "sim")[-1]
        assert ready.host == "gpu-sim" and ready.time_to_ready_s is not None
        src = session.state.logs[run.source_id]
        await wait_for(lambda: len(src.metrics.gen_tps) >= 3)
        assert sims_running("--seed 23")
        await servers.stop("sim")
        assert server_events(session, "sim")[-1].state == "stopped"
        await wait_for(lambda: not sims_running("--seed 23"), timeout=10)
        assert "shutting down gracefully" in (tmp_path / "remote server.log").read_text()
    finally:
        await transport.close()
        session.close()


async def test_a_restart_goes_on_in_its_one_log_source(tmp_path) -> None:
    """After a restart (``S``) the server's output continues in the source it
    had (one Logs tab, no prefixed merged lines), after the lines it wrote
    before; another server gets its own."""
    log = tmp_path / "server.log"
    profile = ServerProfile(name="sim", command=SIM + " --seed 12", log=str(log),
                            args={"startup": "0.05", "rate": "50"})
    other = ServerProfile(name="sim2", command=SIM + " --seed 13",
                          args={"startup": "0.05", "rate": "50"})
    session, servers = launcher(tmp_path, profile, other)
    first = servers.start("sim", "--error-every 0")
    await wait_for(lambda: first.state == "ready")
    src = session.state.logs[first.source_id]
    before = src.total_lines
    again = await servers.restart("sim", "--error-every 0")
    await wait_for(lambda: again.state == "ready")
    assert again.source_id == first.source_id and again is not first
    assert list(session.state.logs) == [first.source_id]
    assert src.open and src.total_lines > before
    fired = [ln for ln in src.lines if "fired up" in ln]
    assert len(fired) == 2  # both starts, in the one source
    assert servers.follower.sources[first.source_id].task is not None  # the new one runs
    second = servers.start("sim2")
    assert second.source_id != first.source_id
    await servers.stop_all()
    await wait_for(lambda: not sims_running("--seed 12") and not sims_running("--seed 13"),
                   timeout=5)
    opened = [e for e in session.state.server_events if e.server == "sim"]
    assert [e.state for e in opened][:3] == ["starting", "ready", "stopped"]
    session.close()


@pytest.mark.parametrize(("sig", "name"), [(signal.SIGTERM, "TERM"), (signal.SIGHUP, "HUP")])
async def test_a_server_stopped_from_outside_says_so_not_just_ended(tmp_path, sig, name) -> None:
    """A signal to the guard from outside perftriage (an admin's kill, another
    program's clean-up) stops the server: its event names the signal, where
    it used to say only "ended" (no exit status reaches the stream)."""
    profile = ServerProfile(name="sim", command=SIM + " --seed 12",
                            args={"startup": "0.05", "rate": "20"})
    session, servers = launcher(tmp_path, profile)
    run = servers.start("sim")
    await wait_for(lambda: run.state == "ready" and run.guard_pid is not None)
    os.kill(run.guard_pid, sig)
    await wait_for(lambda: server_events(session, "sim")[-1].state == "exited")
    exited = server_events(session, "sim")[-1]
    assert exited.detail == f"its guard got SIG{name} from outside perftriage, and stopped it"
    assert any("shutting down gracefully" in ln for ln in exited.last_lines)  # TERM came first
    await wait_for(lambda: not sims_running("--seed 12"), timeout=5)
    session.close()
