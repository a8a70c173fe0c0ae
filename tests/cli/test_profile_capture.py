"""Capturing a profile from a running server: the SGLang contract end to end
(over the loopback OpenSSH server: HTTP through the SSH connection, files by
SFTP), the idle server, missing ranks, vLLM without profiling."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.profile.summarize import summarize_files
from perftriage.services.profile.capture import (
    IDLE_MESSAGE,
    CaptureFailed,
    CaptureRequest,
    capture,
)
from perftriage.transport.local import LocalTransport
from tests.support.sglang_profile_simulator import SOURCES, ProfilingServerSimulator


def _fast(url: str, **kw) -> CaptureRequest:
    kw.setdefault("poll", 0.1)
    kw.setdefault("settle", 0.5)  # the simulator pauses 0.15 s between chunks
    return CaptureRequest(url=url, **kw)


@pytest.mark.ssh
async def test_sglang_capture_over_ssh_and_sftp(sshd, tmp_path: Path) -> None:
    from perftriage.transport.ssh import SSHTransport

    transport = SSHTransport("loopback", sshd.alias, ssh_config=sshd.ssh_config)
    seen: list[str] = []
    try:
        with ProfilingServerSimulator(tp_size=2) as sim:
            result = await capture(transport, _fast(sim.url, steps=3, remote_parent=str(tmp_path)),
                                   tmp_path / "local", seen.append)
    finally:
        await transport.close()
    start = next(b for m, p, b in sim.requests if p == "/start_profile")
    assert start is not None
    assert start["num_steps"] == 3 and start["profile_prefix"] == "perftriage"
    assert start["output_dir"] == result.remote_dir and start["activities"] == ["CPU", "GPU"]
    assert Path(result.remote_dir).parent == tmp_path
    assert not Path(result.remote_dir).exists()  # removed on the host once fetched
    assert not any(p == "/stop_profile" for _, p, _ in sim.requests)  # num_steps: it stops itself
    assert [f.name.split("-TP-")[1] for f in result.files] == ["0.trace.json.gz",
                                                               "1.trace.json.gz"]
    for f, src in zip(result.files, SOURCES):
        assert f.read_bytes() == src.read_bytes()  # whole: not fetched while growing
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert result.summary.ranks == 2 and result.missing == []
    assert result.summary == summarize_files(result.files)
    assert any("still growing" in s for s in seen) and seen[-1].startswith("parsing 2")


async def test_without_steps_perftriage_stops_the_profile(tmp_path: Path) -> None:
    with ProfilingServerSimulator(tp_size=1) as sim:
        result = await capture(LocalTransport(), _fast(sim.url, steps=None, seconds=0.2,
                                                       remote_parent=str(tmp_path)),
                               tmp_path / "local")
    paths = [p for m, p, _ in sim.requests if m == "POST"]
    assert paths == ["/start_profile", "/stop_profile"]
    assert "num_steps" not in sim.requests[1][2]  # type: ignore[operator]
    assert result.summary.ranks == 1 and result.steps is None


async def test_an_idle_server_says_no_steps_ran(tmp_path: Path) -> None:
    with ProfilingServerSimulator(busy=False) as sim:
        with pytest.raises(CaptureFailed) as err:
            await capture(LocalTransport(), _fast(sim.url, idle_after=0.6,
                                                  remote_parent=str(tmp_path)), tmp_path / "l")
        assert sim.profiling is None  # disarmed with /stop_profile
    assert IDLE_MESSAGE in str(err.value) and err.value.kind == "idle"


async def test_ranks_that_never_write_are_named(tmp_path: Path) -> None:
    with ProfilingServerSimulator(tp_size=4, silent_ranks=(1, 3)) as sim:
        result = await capture(LocalTransport(), _fast(sim.url, timeout=3,
                                                       remote_parent=str(tmp_path)),
                               tmp_path / "l")
    assert result.missing == ["TP-1", "TP-3"] and result.summary.ranks == 2


async def test_vllm_without_profiler_config_is_explained(tmp_path: Path) -> None:
    with ProfilingServerSimulator(engine="vllm-off") as sim:
        with pytest.raises(CaptureFailed) as err:
            await capture(LocalTransport(), _fast(sim.url), tmp_path)
    assert err.value.kind == "profiling_off"
    assert "--profiler-config" in str(err.value) and "VLLM_TORCH_PROFILER_DIR" in str(err.value)


def test_profile_command_json_and_vllm_exit(tmp_path: Path) -> None:
    with ProfilingServerSimulator(tp_size=2) as sim:
        res = CliRunner().invoke(cli, ["profile", "--url", sim.url, "--steps", "2", "--json",
                                       "--out", str(tmp_path / "keep"), "--top", "4"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["ranks"] == 2 and len(doc["kernels"]) == 4
    assert len(list((tmp_path / "keep").iterdir())) == 2
    with ProfilingServerSimulator(engine="vllm-off") as sim:
        res = CliRunner().invoke(cli, ["profile", "--url", sim.url])
    assert res.exit_code == 1 and "--profiler-config" in res.output
    res = CliRunner().invoke(cli, ["profile", "--url", "ftp://x"])
    assert res.exit_code == 2


async def test_start_profile_answers_only_after_the_steps(tmp_path: Path) -> None:
    # SGLang notifies the /start_profile caller at the target step: the files
    # are watched while that request is still open
    with ProfilingServerSimulator(tp_size=1, step_s=0.5) as sim:
        seen: list[str] = []
        result = await capture(LocalTransport(), _fast(sim.url, steps=4,
                                                       remote_parent=str(tmp_path)),
                               tmp_path / "l", seen.append)
    assert result.summary.ranks == 1
    assert any("waiting for rank files" in s and "0/1" in s for s in seen)


async def test_vllm_with_profiler_config_takes_the_new_files_of_its_directory(
        tmp_path: Path) -> None:
    traces = tmp_path / "vllm-traces"
    traces.mkdir()
    (traces / "old.1.pt.trace.json.gz").write_bytes(SOURCES[0].read_bytes())  # an earlier run
    with ProfilingServerSimulator(engine="vllm", tp_size=2, trace_dir=traces) as sim:
        result = await capture(LocalTransport(), _fast(sim.url, seconds=0.2,
                                                       vllm_dir=str(traces)), tmp_path / "l")
    assert result.engine == "vllm" and result.steps is None
    assert sorted(f.name.split(".")[0] for f in result.files) == ["worker_TP0", "worker_TP1"]
    assert [p for m, p, _ in sim.requests if m == "POST"] == ["/start_profile", "/stop_profile"]


@pytest.mark.ssh
def test_profile_command_through_the_host_over_ssh(sshd, tmp_path: Path) -> None:
    with ProfilingServerSimulator(tp_size=2) as sim:
        res = CliRunner().invoke(cli, ["--ssh-config", str(sshd.ssh_config), "profile",
                                       "--host", sshd.alias, "--url", sim.url, "--steps", "2",
                                       "--json", "--out", str(tmp_path / "keep")])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["ranks"] == 2 and doc["kernels"][0]["bucket"] == "other"
    start = next(b for _, p, b in sim.requests if p == "/start_profile")
    assert start is not None and start["output_dir"].startswith("/tmp/perftriage-profile-")


@pytest.mark.ssh
def test_profile_command_unreachable_host_exits_3(sshd) -> None:
    from tests.support.sshd import free_port

    res = CliRunner().invoke(cli, ["--ssh-config", str(sshd.ssh_config), "profile", "--host",
                                   f"{sshd.user}@127.0.0.1:{free_port()}", "--url",
                                   "http://127.0.0.1:30000"])
    assert res.exit_code == 3, res.output


@pytest.mark.ssh
def test_profile_command_without_sftp_reads_over_exec_and_says_so(make_sshd, tmp_path: Path):
    # OpenSSH without a `Subsystem sftp` line (as dropbear and many containers):
    # once "SFTP not available: Session request failed", exit 3
    server = make_sshd(sftp=False)
    with ProfilingServerSimulator(tp_size=2) as sim:
        res = CliRunner().invoke(cli, ["--ssh-config", str(server.ssh_config), "profile",
                                       "--host", server.alias, "--url", sim.url, "--steps", "2",
                                       "--out", str(tmp_path / "keep")])
    assert res.exit_code == 0, res.output
    assert "fetched over an exec channel (python3 on the host; SFTP not available" in res.stderr
    kept = sorted((tmp_path / "keep").iterdir())
    assert [f.read_bytes() for f in kept] == [s.read_bytes() for s in SOURCES]
    start = next(b for _, p, b in sim.requests if p == "/start_profile")
    assert start is not None and not Path(start["output_dir"]).exists()  # removed on the host


def test_profile_command_refuses_a_hostile_server_in_one_line(tmp_path: Path) -> None:
    from tests.support.hostile_capture import Scene, swap_dir

    scene = Scene(tmp_path)
    cfg = tmp_path / "c.toml"
    cfg.write_text("[profile]\ntimeout = 8\n")
    for kw, says in (({"plant": swap_dir(scene)}, "is a symbolic link now (refused to follow"),
                     ({"server_info": b'{"tp_size": 1000000000000000000}'},
                      "tp_size is 1000000000000000000, above the upper bound 4096")):
        with ProfilingServerSimulator(tp_size=1, **kw) as sim:
            res = CliRunner().invoke(cli, ["--config", str(cfg), "profile", "--url", sim.url,
                                           "--steps", "2", "--json",
                                           "--out", str(tmp_path / "keep")])
        assert res.exit_code == 1, res.output
        assert says in res.stderr and len(res.stderr.strip().splitlines()) == 1
        assert "Traceback" not in res.output
    assert scene.intact()
