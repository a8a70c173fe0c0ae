"""A hostile server during a profile capture (issue 31, items 1 and 2; issue
35, item 6): it controls what appears in the directory perftriage made for
it, and what /get_server_info says. Each attack is run through the three
ways files come back: the local disk, SFTP over the loopback OpenSSH server,
and the exec channel of an OpenSSH server configured without an ``sftp``
subsystem. The server is the SGLang simulator (tests/support), its hostile
acts done by its ``plant`` hook right before its ranks write."""

from __future__ import annotations

from pathlib import Path

import pytest

from perftriage.services.profile.capture import CaptureFailed, CaptureRequest, capture
from perftriage.transport.local import LocalTransport
from tests.support.hostile_capture import (
    PLANTS,
    SERVER_INFO,
    Scene,
    colliding_names,
    links_to_remove,
    swap_dir,
)
from tests.support.sglang_profile_simulator import ProfilingServerSimulator
from tests.support.sshd import SshServer, sshd_available


@pytest.fixture(scope="module")
def no_sftp_sshd(tmp_path_factory):
    """A loopback OpenSSH server whose config has no ``Subsystem sftp`` line."""
    if not sshd_available():
        pytest.skip("OpenSSH sshd not installed (run the README's test command)")
    server = SshServer(tmp_path_factory.mktemp("sshd-nosftp"), sftp=False).start()
    yield server
    server.stop()


@pytest.fixture(params=["local", "SFTP", "exec"])
async def via(request):
    """(transport, the path its files should come by)."""
    if request.param == "local":
        yield LocalTransport(), "local"
        return
    from perftriage.transport.ssh import SSHTransport

    server = request.getfixturevalue("sshd" if request.param == "SFTP" else "no_sftp_sshd")
    transport = SSHTransport("loopback", server.alias, ssh_config=server.ssh_config)
    try:
        yield transport, request.param
    finally:
        await transport.close()


def _req(url: str, parent: Path, **kw) -> CaptureRequest:
    kw.setdefault("poll", 0.1)
    kw.setdefault("settle", 0.5)
    kw.setdefault("steps", 2)
    return CaptureRequest(url=url, remote_parent=str(parent), **kw)


async def test_a_directory_swapped_for_a_symlink_is_neither_read_nor_emptied(via, tmp_path):
    transport, path = via
    scene = Scene(tmp_path)
    with ProfilingServerSimulator(tp_size=1, plant=swap_dir(scene)) as sim:
        with pytest.raises(CaptureFailed) as err:
            await capture(transport, _req(sim.url, scene.host), scene.out)
    assert err.value.kind == "refused"
    assert "symbolic link" in str(err.value) and "refused" in str(err.value)
    # the server's files and the one it wrote through the link are all still there
    assert scene.intact() and (scene.elsewhere / "precious.trace.json.gz").exists()
    assert any(p.name.endswith("TP-0.trace.json.gz") for p in scene.elsewhere.iterdir())
    assert not scene.out.exists() or not list(scene.out.iterdir())
    assert scene.left() == []  # the link in perftriage's place is removed, itself only


@pytest.mark.parametrize("attack", [name for name, (_, what) in PLANTS.items() if what])
async def test_a_rank_file_that_is_not_a_plain_file_of_its_own_is_refused(via, tmp_path, attack):
    transport, path = via
    scene = Scene(tmp_path)
    plant, what = PLANTS[attack]
    seen: list[str] = []
    with ProfilingServerSimulator(tp_size=2, silent_ranks=(0,), plant=plant(scene)) as sim:
        result = await capture(transport, _req(sim.url, scene.host), scene.out, seen.append)
    assert result.via == path
    assert [f.name.rsplit("-TP-", 1)[1] for f in result.files] == ["1.trace.json.gz"]
    assert result.summary.ranks == 1 and result.missing == ["TP-0"]
    assert list(result.refused.values()) == [what]
    assert any(s.startswith("refused ") and what in s for s in seen)
    assert not scene.leaked() and scene.intact()  # the link was removed, not its target
    assert scene.left() == []


async def test_removal_never_follows_links_or_subdirectories_out(via, tmp_path):
    transport, path = via
    scene = Scene(tmp_path)
    with ProfilingServerSimulator(tp_size=1, plant=links_to_remove(scene)) as sim:
        result = await capture(transport, _req(sim.url, scene.host), scene.out)
    assert result.summary.ranks == 1
    assert scene.intact() and scene.left() == []


def _garbage(out: Path, stem: str) -> None:
    (out / f"{stem}-TP-0.trace.json.gz").write_bytes(b"\x1f\x8b not a gzip")


@pytest.mark.parametrize("failure", ["idle", "start refused", "timeout", "bad trace"])
async def test_every_failed_capture_removes_its_directory(via, tmp_path, failure):
    transport, path = via
    scene = Scene(tmp_path)
    kw: dict = {"tp_size": 1}
    req: dict = {}
    if failure == "idle":
        kw["busy"], req["idle_after"] = False, 0.6
    elif failure == "timeout":  # always growing: never complete
        kw["chunk_delay_s"], req["settle"], req["timeout"] = 0.4, 3.0, 1.5
    elif failure == "bad trace":
        kw["silent_ranks"], kw["plant"] = (0,), _garbage
    with ProfilingServerSimulator(**kw) as sim:
        if failure == "start refused":
            sim.profiling = {"already": True}  # "Profiling is already in progress"
        with pytest.raises(CaptureFailed) as err:
            await capture(transport, _req(sim.url, scene.host, **req), scene.out)
    assert err.value.kind == {"idle": "idle", "start refused": "http", "timeout": "timeout",
                              "bad trace": "trace"}[failure]
    assert scene.left() == []


async def test_names_that_collide_once_made_safe_stay_distinct_files(via, tmp_path):
    transport, path = via
    scene = Scene(tmp_path)
    with ProfilingServerSimulator(tp_size=1, plant=colliding_names) as sim:
        result = await capture(transport, _req(sim.url, scene.host, ranks=4), scene.out)
    local = sorted(f.name for f in result.files)
    assert len(local) == len(set(local)) == 4
    assert {"a_b-TP-5.trace.json.gz", "a_b-TP-5-2.trace.json.gz",
            "a_b-TP-5-3.trace.json.gz"} <= set(local)
    assert result.summary.ranks == 4 == len(list(scene.out.iterdir()))


# -- /get_server_info is the server's word ---------------------------------------------------


@pytest.mark.parametrize(("body", "says"), SERVER_INFO,
                         ids=lambda v: v[:40].decode("latin-1") if isinstance(v, bytes) else None)
async def test_server_info_out_of_bounds_is_a_clear_error_before_anything_starts(
        tmp_path, body, says):
    scene = Scene(tmp_path)
    with ProfilingServerSimulator(tp_size=1, server_info=body) as sim:
        with pytest.raises(CaptureFailed) as err:
            await capture(LocalTransport(), _req(sim.url, scene.host, timeout=8), scene.out)
    assert err.value.kind == "server_info" and says in str(err.value), str(err.value)
    assert len(str(err.value)) < 200
    assert [p for _, p, _ in sim.requests] == ["/get_server_info"]  # nothing started
    assert scene.left() == []


async def test_whole_valued_floats_are_rank_counts(tmp_path):
    scene = Scene(tmp_path)
    with ProfilingServerSimulator(tp_size=2, server_info=b'{"tp_size": 2.0, "pp_size": null}'
                                  ) as sim:
        result = await capture(LocalTransport(), _req(sim.url, scene.host), scene.out)
    assert result.summary.ranks == 2 and result.missing == []


async def test_a_file_that_grows_after_it_was_complete_is_refused_not_read_on(via, tmp_path):
    from perftriage.transport.capture_dir import Refused
    from perftriage.transport.files import open_files

    transport, path = via
    files = await open_files(transport)
    try:
        directory = await files.make_dir(str(tmp_path), "perftriage-profile-")
        rank = Path(directory, "r-TP-0.trace.json.gz")
        rank.write_bytes(b"x" * 1000)
        assert (await files.listing(directory)).files == {rank.name: 1000}
        with rank.open("ab") as fh:
            fh.write(b"y" * 10_000_000)  # a bomb written after the file looked complete
        with pytest.raises(Refused, match="changed size"):
            await files.fetch(directory, rank.name, 1000, tmp_path / "copy")
        assert not (tmp_path / "copy").exists()  # no partial copy left
        assert await files.remove_dir(directory) == "" and not Path(directory).exists()
    finally:
        await files.close()
    assert files.via == path


async def test_a_rank_file_over_the_trace_cap_is_not_fetched(via, tmp_path):
    transport, path = via
    scene = Scene(tmp_path)

    def bomb(out: Path, stem: str) -> None:
        (out / f"{stem}-TP-0.trace.json.gz").write_bytes(b"\0" * (3 << 20))

    with ProfilingServerSimulator(tp_size=1, silent_ranks=(0,), plant=bomb) as sim:
        with pytest.raises(CaptureFailed) as err:
            await capture(transport, _req(sim.url, scene.host, max_trace_mb=2), scene.out)
    assert err.value.kind == "too_big" and "over the 2 MiB cap" in str(err.value)
    assert not scene.out.exists() and scene.left() == []


async def test_the_captured_event_says_how_the_files_came_and_what_was_refused(tmp_path):
    from perftriage.services.cockpit import Cockpit
    from tests.support.hostile_capture import link_to_secret

    scene = Scene(tmp_path)
    cockpit = Cockpit(sessions_dir=tmp_path / "sessions")
    with ProfilingServerSimulator(tp_size=2, silent_ranks=(0,), plant=link_to_secret(scene)) as sim:
        cap = await cockpit.profiles.capture("localhost", sim.url, 2)
    cockpit.session.close()
    assert cap.via == "local" and cap.missing == ["TP-0"]
    assert len(cap.refused) == 1 and cap.refused[0].endswith("TP-0.trace.json.gz: a symbolic link")
    assert cockpit.session.state.profiles[-1].refused == cap.refused
    assert scene.intact() and not any(scene.secret.read_bytes()[:7] in Path(f).read_bytes()
                                      for f in cap.files)


async def test_a_directory_swapped_after_it_was_listed_is_neither_read_nor_emptied(via, tmp_path):
    from perftriage.transport.capture_dir import Refused
    from perftriage.transport.files import open_files

    transport, path = via
    scene = Scene(tmp_path)
    files = await open_files(transport)
    try:
        directory = await files.make_dir(str(scene.host), "perftriage-profile-")
        Path(directory, "precious.db").write_bytes(b"x" * 7)
        assert (await files.listing(directory)).files == {"precious.db": 7}
        Path(directory).rename(scene.host / "moved-away")  # the swap, after the listing
        Path(directory).symlink_to(scene.elsewhere, target_is_directory=True)
        with pytest.raises(Refused, match="no longer the directory perftriage made"):
            await files.fetch(directory, "precious.db", 7, tmp_path / "copy")
        assert "removed that, not what it points at" in await files.remove_dir(directory)
    finally:
        await files.close()
    assert not (tmp_path / "copy").exists() and scene.intact() and scene.left() == []


@pytest.mark.ssh
async def test_the_exec_helper_runs_nothing_planted_on_the_host(no_sftp_sshd, tmp_path):
    # a server that writes where the SSH user's Python looks (PYTHONPATH,
    # sitecustomize) must not get its code run by the helper: python3 -I -S
    from perftriage.transport.files import open_files
    from perftriage.transport.ssh import SSHTransport

    marker = tmp_path / "PWNED"
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    transport = SSHTransport("loopback", no_sftp_sshd.alias, ssh_config=no_sftp_sshd.ssh_config,
                             preamble=f"export PYTHONPATH={planted}")
    files = await open_files(transport)
    try:
        assert files.via == "exec"
        directory = await files.make_dir(str(tmp_path), "perftriage-profile-")
        Path(directory, "r-TP-0.trace.json.gz").write_bytes(b"trace")
        await files.listing(directory)
        await files.fetch(directory, "r-TP-0.trace.json.gz", 5, tmp_path / "copy")
        await files.remove_dir(directory)
        assert not marker.exists()
        probe = await transport.run("python3 -c 'import sys'")  # the plant itself works
        assert probe.exit_status == 0 and marker.exists()
    finally:
        await files.close()
        await transport.close()


async def test_vllm_trace_directory_links_are_refused_and_the_directory_kept(via, tmp_path):
    # vLLM writes into its own directory (not perftriage's): nothing there is
    # removed, and a link in it is refused like in SGLang's
    transport, path = via
    scene = Scene(tmp_path)
    traces = tmp_path / "vllm-traces"
    traces.mkdir()
    (traces / "worker_TP9.1.pt.trace.json.gz").symlink_to(scene.secret)
    with ProfilingServerSimulator(engine="vllm", tp_size=2, trace_dir=traces) as sim:
        result = await capture(transport, _req(sim.url, scene.host, seconds=0.2,
                                               vllm_dir=str(traces)), scene.out)
    assert result.via == path and result.engine == "vllm" and len(result.files) == 2
    assert list(result.refused.values()) == ["a symbolic link"]
    assert not scene.leaked() and scene.intact()
    assert len(list(traces.iterdir())) == 3  # the server's directory is left as it was
