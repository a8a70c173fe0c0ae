"""SSH transport against a real OpenSSH sshd on 127.0.0.1 (tests/support/sshd.py)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time

import pytest

from tests.support.helpers import alive, wait_for
from tests.support.sshd import free_port, keygen
from perftriage.transport.base import (
    AUTH,
    CHANNEL_LIMIT,
    DNS,
    HOST_KEY_CHANGED,
    HOST_KEY_UNKNOWN,
    REFUSED,
    TIMEOUT,
    TransportError,
)
from perftriage.transport.ssh import SSHTransport, classify, parse_target

pytestmark = pytest.mark.ssh


def transport(server, **kw) -> SSHTransport:
    """A transport to ``server`` through its ssh config's Host alias."""
    kw.setdefault("ssh_config", server.ssh_config)
    kw.setdefault("connect_timeout", 10.0)
    return SSHTransport(kw.pop("name", "box"), kw.pop("target", server.alias), **kw)


def processes_matching(text: str) -> list[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if text in line and "ps -eo" not in line]


# --- run and stream ---------------------------------------------------------------------


async def test_run_returns_status_stdout_stderr_and_duration(sshd):
    t = transport(sshd)
    try:
        r = await t.run("echo out; echo err >&2; exit 3")
        assert (r.exit_status, r.stdout, r.stderr, r.timed_out) == (3, "out\n", "err\n", False)
        assert r.duration_s > 0
        r = await t.run("printf 'no newline'")
        assert (r.exit_status, r.stdout, r.stderr) == (0, "no newline", "")
        r = await t.run("cat; echo", stdin="line1\nline2")
        assert r.stdout == "line1\nline2\n"
        quoted = "it's $HOME `x` \"q\""
        r = await t.run(f"printf '%s' {__import__('shlex').quote(quoted)}")
        assert r.stdout == quoted
        assert t.state == "up" and t.connected
    finally:
        await t.close()


async def test_preamble_wraps_runs_and_streams(sshd):
    t = transport(sshd, preamble="export PT_X=42; cd /tmp")
    try:
        r = await t.run("echo $PT_X; pwd")
        assert r.stdout == "42\n/tmp\n"
        lines = [line async for line in t.stream("echo $PT_X")]
        assert lines == ["42"]
    finally:
        await t.close()


async def test_stream_reads_in_batches_and_splits_lines(sshd):
    t = transport(sshd)
    try:
        n = batches = 0
        last = None
        async for batch in t.stream_batches("seq 1 100000"):
            n += len(batch)
            batches += 1
            last = batch[-1]
        assert n == 100000 and last == "100000"
        assert batches < 100000 / 10  # chunks, not a read per line
        lines = [line async for line in t.stream("printf 'a\\nb\\nno-newline'")]
        assert lines == ["a", "b", "no-newline"]
    finally:
        await t.close()


async def test_32_concurrent_commands_on_one_host_all_succeed(sshd):
    t = transport(sshd)
    try:
        results = await asyncio.gather(*(t.run(f"echo {i}; echo e{i} >&2") for i in range(32)))
        assert [r.stdout for r in results] == [f"{i}\n" for i in range(32)]
        assert [r.stderr for r in results] == [f"e{i}\n" for i in range(32)]
        assert all(r.exit_status == 0 for r in results)

        async def count(i: int) -> int:
            return sum([len(b) async for b in t.stream_batches(f"seq 1 {1000 + i}")])

        # more streams than sshd's MaxSessions (10): the per-host cap queues them
        counts = await asyncio.gather(*(count(i) for i in range(12)))
        assert counts == [1000 + i for i in range(12)]
    finally:
        await t.close()


async def test_refused_channel_opens_are_retried_then_reported(make_sshd):
    server = make_sshd(max_sessions=2)
    t = transport(server)  # max_channels 8 > MaxSessions 2
    try:
        results = await asyncio.gather(*(t.run(f"echo {i}") for i in range(32)))
        assert [r.stdout for r in results] == [f"{i}\n" for i in range(32)]
        # hold every session the server allows, then ask for one more
        t.channel_retries = 2
        holders = [t.stream("exec tail -f /dev/null") for _ in range(2)]
        tasks = [asyncio.create_task(anext(h)) for h in holders]
        await asyncio.sleep(0)  # let them open their channels
        with pytest.raises(TransportError) as info:
            async for _ in t.stream("echo never"):
                pass
        assert info.value.kind == CHANNEL_LIMIT and "channel" in info.value.reason
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for h in holders:
            await h.aclose()
    finally:
        await t.close()


# --- cancellation leaves nothing behind on the host -------------------------------------


async def test_cancelling_a_stream_kills_the_remote_process(sshd, tmp_path):
    followed = tmp_path / "server.log"
    followed.write_text("first\n")
    t = transport(sshd)
    pids: list[int] = []

    async def follow() -> None:
        async for line in t.stream(f"echo $$; exec tail -F {followed}"):
            if line.isdigit():
                pids.append(int(line))

    try:
        task = asyncio.create_task(follow())
        await wait_for(lambda: bool(pids) and processes_matching(f"tail -F {followed}"), timeout=30)
        assert alive(pids[0])
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await wait_for(lambda: not alive(pids[0]) and not processes_matching(f"tail -F {followed}"),
                       timeout=30)
    finally:
        await t.close()


async def test_cancelled_and_timed_out_runs_kill_the_remote_process(sshd, tmp_path):
    t = transport(sshd)
    try:
        pidfile = tmp_path / "pid"
        task = asyncio.create_task(t.run(f"sh -c 'echo $$ > {pidfile}; exec sleep 1001'"))
        await wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), timeout=30)
        pid = int(pidfile.read_text())
        assert alive(pid)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await wait_for(lambda: not alive(pid), timeout=30)

        pidfile2 = tmp_path / "pid2"
        r = await t.run(f"sh -c 'echo $$ > {pidfile2}; exec sleep 1002' & wait", timeout=0.5)
        assert r.timed_out and r.exit_status is None
        pid2 = int(pidfile2.read_text())
        await wait_for(lambda: not alive(pid2), timeout=30)
        assert not processes_matching("sleep 1001") and not processes_matching("sleep 1002")
        assert (await t.run("echo still usable")).stdout == "still usable\n"
    finally:
        await t.close()


# --- connections --------------------------------------------------------------------------


async def test_reconnects_after_the_server_restarts(make_sshd):
    server = make_sshd()
    states: list[tuple[str, str | None]] = []
    t = transport(server, on_state=lambda s, r: states.append((s, r)))
    keeper = asyncio.create_task(t.maintain())
    try:
        await wait_for(lambda: t.state == "up", timeout=30)
        assert (await t.run("echo one")).stdout == "one\n"
        server.restart()
        await wait_for(lambda: any(s == "retrying" for s, _ in states), timeout=30)
        await wait_for(lambda: t.state == "up", timeout=60)
        assert (await t.run("echo two")).stdout == "two\n"
        names = [s for s, _ in states]
        assert names[0] == "connecting" and "up" in names and names[-1] == "up"
        reason = next(r for s, r in states if s == "retrying")
        assert reason and "connection" in reason
    finally:
        keeper.cancel()
        await asyncio.gather(keeper, return_exceptions=True)
        await t.close()


async def test_run_without_maintainer_reconnects_by_itself(make_sshd):
    server = make_sshd()
    t = transport(server)
    try:
        assert (await t.run("echo one")).ok
        server.restart()
        await wait_for(lambda: not t.connected, timeout=30)
        assert (await t.run("echo two")).stdout == "two\n"
    finally:
        await t.close()


async def test_alias_from_a_temporary_ssh_config(sshd, tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text(
        "Host gpu-box\n"
        "    HostName 127.0.0.1\n"
        f"    Port {sshd.port}\n"
        f"    User {sshd.user}\n"
        f"    IdentityFile {sshd.client_key}\n"
        f"    UserKnownHostsFile {sshd.known_hosts}\n"
        "    IdentitiesOnly yes\n"
    )
    t = SSHTransport("gpu-box", "gpu-box", ssh_config=config)
    try:
        r = await t.run("echo via-alias")
        assert r.stdout == "via-alias\n"
    finally:
        await t.close()


async def test_user_at_host_port_target(sshd):
    t = SSHTransport("adhoc", sshd.spec, ssh_config=[], known_hosts=sshd.known_hosts,
                     client_keys=[sshd.client_key])
    try:
        assert (await t.run("id -un")).stdout.strip() == sshd.user
    finally:
        await t.close()


# --- host keys ------------------------------------------------------------------------------


def _config_with_known_hosts(server, tmp_path, known_hosts):
    config = tmp_path / "ssh_config"
    config.write_text(
        server.ssh_config.read_text().replace(
            f"UserKnownHostsFile {server.known_hosts}", f"UserKnownHostsFile {known_hosts}"
        )
    )
    return config


async def test_unknown_host_key_is_refused_with_how_to_accept(sshd, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text("")
    states: list[str] = []
    t = transport(sshd, ssh_config=_config_with_known_hosts(sshd, tmp_path, known),
                  on_state=lambda s, r: states.append(s))
    try:
        with pytest.raises(TransportError) as info:
            await t.run("true")
        err = info.value
        assert err.kind == HOST_KEY_UNKNOWN
        assert "host key unknown" in err.reason and "--accept-new-host-keys" in err.reason
        assert "accept_new_host_key = true" in err.reason and "\n" not in err.reason
        assert known.read_text() == ""  # nothing recorded without the opt-in
        assert states[-1] == "down"
    finally:
        await t.close()


async def test_accept_new_records_the_key_then_it_is_trusted(sshd, tmp_path):
    known = tmp_path / "sub" / "known_hosts"  # missing file and directory
    config = _config_with_known_hosts(sshd, tmp_path, known)
    t = transport(sshd, ssh_config=config, accept_new_host_key=True)
    try:
        assert (await t.run("echo ok")).stdout == "ok\n"
    finally:
        await t.close()
    server_key = (sshd.root / "ssh_host_ed25519_key.pub").read_text().split()[1]
    recorded = known.read_text().splitlines()
    assert recorded == [f"[127.0.0.1]:{sshd.port} ssh-ed25519 {server_key}"]
    strict = transport(sshd, ssh_config=config)  # no opt-in: the recorded key is trusted
    try:
        assert (await strict.run("echo again")).stdout == "again\n"
    finally:
        await strict.close()
    assert known.read_text().splitlines() == recorded  # recorded once


async def test_changed_host_key_is_always_refused(sshd, tmp_path):
    other = keygen(tmp_path / "other_host_key")
    known = tmp_path / "known_hosts"
    pub = other.with_suffix(".pub").read_text().split()
    known.write_text(f"[127.0.0.1]:{sshd.port} {pub[0]} {pub[1]}\n")
    before = known.read_text()
    t = transport(sshd, ssh_config=_config_with_known_hosts(sshd, tmp_path, known),
                  accept_new_host_key=True)
    try:
        with pytest.raises(TransportError) as info:
            await t.run("true")
        assert info.value.kind == HOST_KEY_CHANGED
        assert "HOST KEY CHANGED" in info.value.reason and "ssh-keygen -R" in info.value.reason
        assert known.read_text() == before
    finally:
        await t.close()


# --- failures, each with a one-line reason -------------------------------------------------


async def test_wrong_client_key_is_an_authentication_failure(sshd, tmp_path):
    wrong = keygen(tmp_path / "wrong_key")
    config = tmp_path / "ssh_config"
    config.write_text(sshd.ssh_config.read_text().replace(str(sshd.client_key), str(wrong)))
    t = transport(sshd, ssh_config=config)
    try:
        with pytest.raises(TransportError) as info:
            await t.run("true")
        assert info.value.kind == AUTH and "authentication failed" in info.value.reason
        assert "\n" not in info.value.reason
    finally:
        await t.close()


async def test_refused_port(sshd):
    port = free_port()
    t = SSHTransport("closed", f"{sshd.user}@127.0.0.1:{port}", ssh_config=[],
                     known_hosts=sshd.known_hosts, client_keys=[sshd.client_key])
    try:
        with pytest.raises(TransportError) as info:
            await t.run("true")
        assert info.value.kind == REFUSED and "connection refused" in info.value.reason
        assert t.state == "retrying"
    finally:
        await t.close()


async def test_connect_timeout_on_a_server_that_never_speaks(sshd):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    port = silent.getsockname()[1]
    t = SSHTransport("mute", f"{sshd.user}@127.0.0.1:{port}", ssh_config=[],
                     known_hosts=sshd.known_hosts, client_keys=[sshd.client_key],
                     connect_timeout=0.5)
    try:
        with pytest.raises(TransportError) as info:
            await t.run("true")
        assert info.value.kind == TIMEOUT and "connect timeout" in info.value.reason
    finally:
        silent.close()
        await t.close()


def test_name_not_resolved_is_classified():
    err = classify(socket.gaierror(socket.EAI_NONAME, "Name or service not known"), "gpu-x")
    assert err.kind == DNS and err.reason.startswith("name not resolved: gpu-x")


def test_parse_target():
    assert parse_target("root@10.0.0.5:2222") == ("root", "10.0.0.5", 2222)
    assert parse_target("gpu-a") == (None, "gpu-a", None)
    assert parse_target("me@[::1]:22") == ("me", "::1", 22)
    assert parse_target("fe80::1") == (None, "fe80::1", None)
    for bad in ("", "-oProxyCommand=x", "a b", "u@h:port", "u@h:70000"):
        with pytest.raises(ValueError):
            parse_target(bad)


# --- slow shell start-up files --------------------------------------------------------------


async def test_slow_rc_file_is_not_paid_per_probe(make_sshd):
    server = make_sshd(rc_sleep=0.2)
    # the rc file really is slow for a plain ssh command
    t0 = time.perf_counter()
    subprocess.run([*server.ssh_argv(), "true"], check=True, capture_output=True)
    assert time.perf_counter() - t0 >= 0.2
    t = transport(server)
    try:
        assert (await t.run("true")).ok  # connect + one shell start (pays the rc once)
        n = 20
        t0 = time.perf_counter()
        for i in range(n):
            assert (await t.run(f"echo {i}")).stdout == f"{i}\n"
        # paying the rc file per probe would take n * 0.2 s = 4 s
        assert time.perf_counter() - t0 < n * 0.2 / 2
    finally:
        await t.close()
