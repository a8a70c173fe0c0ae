"""A hostile server during a profile capture (issue 31, items 1 and 2; issue
35, item 6): it controls what appears in the directory perftriage made for
it, and what /get_server_info says. Each attack is run through the three
ways files come back: the local disk, SFTP over the loopback OpenSSH server,
and the exec channel of an OpenSSH server configured without an ``sftp``
subsystem. The server is the SGLang simulator (tests/support), its hostile
acts done by its ``plant`` hook right before its ranks write."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perftriage.services.profile.capture import CaptureFailed, CaptureRequest, capture
from perftriage.transport.local import LocalTransport
from tests.support.sglang_profile_simulator import SOURCES, ProfilingServerSimulator
from tests.support.sshd import SshServer, sshd_available

SECRET = b"root:*:19000:0:99999:7:::\n"


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


def _host(tmp_path: Path) -> Path:
    host = tmp_path / "host"
    host.mkdir()
    return host


def _left(host: Path) -> list[str]:
    return sorted(p.name for p in host.iterdir() if p.name.startswith("perftriage-profile-"))


def _elsewhere(tmp_path: Path) -> Path:
    """A directory of someone else's, with a file that must survive."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.db").write_bytes(b"keep me")
    return elsewhere


def _secret(tmp_path: Path) -> Path:
    secret = tmp_path / "shadow"
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    return secret


def _no_secret_in(directory: Path) -> bool:
    return not directory.exists() or all(SECRET[:7] not in f.read_bytes()
                                         for f in directory.iterdir())


async def test_a_directory_swapped_for_a_symlink_is_neither_read_nor_emptied(via, tmp_path):
    transport, path = via
    host, elsewhere = _host(tmp_path), _elsewhere(tmp_path)

    def swap(out: Path, stem: str) -> None:
        out.rename(host / "moved-away")
        out.symlink_to(elsewhere, target_is_directory=True)
        (elsewhere / "precious.trace.json.gz").write_bytes(SOURCES[0].read_bytes())

    with ProfilingServerSimulator(tp_size=1, plant=swap) as sim:
        with pytest.raises(CaptureFailed) as err:
            await capture(transport, _req(sim.url, host), tmp_path / "out")
    assert err.value.kind == "refused"
    assert "symbolic link" in str(err.value) and "refused" in str(err.value)
    # the server's files and the one it wrote through the link are all still there
    assert (elsewhere / "precious.db").read_bytes() == b"keep me"
    assert (elsewhere / "precious.trace.json.gz").exists()
    assert any(p.name.endswith("TP-0.trace.json.gz") for p in elsewhere.iterdir())
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    assert _left(host) == []  # the link in perftriage's place is removed, itself only


async def test_a_rank_file_that_is_a_link_to_a_secret_is_refused(via, tmp_path):
    transport, path = via
    host, secret = _host(tmp_path), _secret(tmp_path)

    def link(out: Path, stem: str) -> None:
        (out / f"{stem}-TP-0.trace.json.gz").symlink_to(secret)

    seen: list[str] = []
    with ProfilingServerSimulator(tp_size=2, silent_ranks=(0,), plant=link) as sim:
        result = await capture(transport, _req(sim.url, host), tmp_path / "out", seen.append)
    assert result.via == path
    assert [f.name.rsplit("-TP-", 1)[1] for f in result.files] == ["1.trace.json.gz"]
    assert result.summary.ranks == 1 and result.missing == ["TP-0"]
    assert list(result.refused.values()) == ["a symbolic link"]
    assert any("refused" in s and "symbolic link" in s for s in seen)
    assert _no_secret_in(tmp_path / "out")
    assert secret.read_bytes() == SECRET  # the link was removed, not its target
    assert _left(host) == []


@pytest.mark.parametrize("what", ["valid trace", "FIFO", "hard link"])
async def test_a_rank_file_that_is_not_a_plain_file_of_its_own_is_refused(via, tmp_path, what):
    transport, path = via
    host, secret = _host(tmp_path), _secret(tmp_path)
    trace = tmp_path / "someone-elses.trace.json.gz"
    trace.write_bytes(SOURCES[0].read_bytes())

    def plant(out: Path, stem: str) -> None:
        name = out / f"{stem}-TP-0.trace.json.gz"
        if what == "valid trace":
            name.symlink_to(trace)
        elif what == "FIFO":
            os.mkfifo(name)
        else:
            os.link(secret, name)

    with ProfilingServerSimulator(tp_size=2, silent_ranks=(0,), plant=plant) as sim:
        result = await capture(transport, _req(sim.url, host), tmp_path / "out")
    assert len(result.files) == 1 and result.summary.ranks == 1 and result.missing == ["TP-0"]
    assert list(result.refused.values()) == [{"valid trace": "a symbolic link",
                                              "FIFO": "a FIFO",
                                              "hard link": "a file with 2 hard links"}[what]]
    assert _no_secret_in(tmp_path / "out")
    assert secret.read_bytes() == SECRET and trace.exists()
    assert _left(host) == []


async def test_removal_never_follows_links_or_subdirectories_out(via, tmp_path):
    transport, path = via
    host, elsewhere = _host(tmp_path), _elsewhere(tmp_path)

    def plant(out: Path, stem: str) -> None:
        (out / "to-elsewhere").symlink_to(elsewhere, target_is_directory=True)
        (out / "sub" / "deeper").mkdir(parents=True)
        (out / "sub" / "deeper" / "link").symlink_to(elsewhere / "precious.db")
        (out / "sub" / "precious.db").symlink_to(elsewhere / "precious.db")

    with ProfilingServerSimulator(tp_size=1, plant=plant) as sim:
        result = await capture(transport, _req(sim.url, host), tmp_path / "out")
    assert result.summary.ranks == 1
    assert (elsewhere / "precious.db").read_bytes() == b"keep me"
    assert _left(host) == []


@pytest.mark.parametrize("failure", ["idle", "start refused", "timeout", "bad trace"])
async def test_every_failed_capture_removes_its_directory(via, tmp_path, failure):
    transport, path = via
    host = _host(tmp_path)
    kw: dict = {"tp_size": 1}
    req: dict = {}
    if failure == "idle":
        kw["busy"], req["idle_after"] = False, 0.6
    elif failure == "timeout":  # always growing: never complete
        kw["chunk_delay_s"], req["settle"], req["timeout"] = 0.4, 3.0, 1.5

    def garbage(out: Path, stem: str) -> None:
        (out / f"{stem}-TP-0.trace.json.gz").write_bytes(b"\x1f\x8b not a gzip")

    if failure == "bad trace":
        kw["silent_ranks"], kw["plant"] = (0,), garbage
    with ProfilingServerSimulator(**kw) as sim:
        if failure == "start refused":
            sim.profiling = {"already": True}  # "Profiling is already in progress"
        with pytest.raises(CaptureFailed) as err:
            await capture(transport, _req(sim.url, host, **req), tmp_path / "out")
    assert err.value.kind == {"idle": "idle", "start refused": "http", "timeout": "timeout",
                              "bad trace": "trace"}[failure]
    assert _left(host) == []


async def test_names_that_collide_once_made_safe_stay_two_files(via, tmp_path):
    transport, path = via
    host = _host(tmp_path)
    names = [b"a b-TP-5.trace.json.gz", b"a_b-TP-5.trace.json.gz", b"a\xffb-TP-5.trace.json.gz"]

    def plant(out: Path, stem: str) -> None:
        for i, name in enumerate(names):
            with open(os.fsencode(out) + b"/" + name, "wb") as fh:
                fh.write(SOURCES[i % 2].read_bytes())

    with ProfilingServerSimulator(tp_size=1, plant=plant) as sim:
        result = await capture(transport, _req(sim.url, host, ranks=4), tmp_path / "out")
    local = sorted(f.name for f in result.files)
    assert len(local) == len(set(local)) == 4
    assert {"a_b-TP-5.trace.json.gz", "a_b-TP-5-2.trace.json.gz",
            "a_b-TP-5-3.trace.json.gz"} <= set(local)
    assert result.summary.ranks == 4 == len(list((tmp_path / "out").iterdir()))


# -- /get_server_info is the server's word ---------------------------------------------------

DEEP = b'{"tp_size": 1, "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"


@pytest.mark.parametrize(("body", "says"), [
    (b'{"tp_size": 1000000000000000000}', "above the upper bound 4096"),
    (b'{"tp_size": 1e300}', "above the upper bound 4096"),
    (b'{"tp_size": 4097}', "above the upper bound 4096"),
    (b'{"tp_size": 64, "pp_size": 128}', "tp_size x pp_size is 8192, above the upper bound"),
    (b'{"tp_size": Infinity}', "no usable JSON"),
    (b'{"tp_size": 1e400}', "Number out of range"),
    (DEEP, "nested too deeply"),
    (b'{"tp_size": -5}', "below the lower bound 1"),
    (b'{"tp_size": 0}', "below the lower bound 1"),
    (b'{"tp_size": 2.5}', "not a whole number"),
    (b'{"tp_size": "2"}', "not a whole number"),
    (b'{"tp_size": true}', "not a whole number"),
    (b'{"pp_size": [1]}', "pp_size is [1], not a whole number"),
    (b'[1, 2]', "not a JSON object"),
    (b'garbage', "no usable JSON"),
], ids=lambda v: v[:40].decode("latin-1") if isinstance(v, bytes) else None)
async def test_server_info_out_of_bounds_is_a_clear_error_before_anything_starts(
        tmp_path, body, says):
    host = _host(tmp_path)
    with ProfilingServerSimulator(tp_size=1, server_info=body) as sim:
        with pytest.raises(CaptureFailed) as err:
            await capture(LocalTransport(), _req(sim.url, host, timeout=8), tmp_path / "out")
    assert err.value.kind == "server_info" and says in str(err.value), str(err.value)
    assert len(str(err.value)) < 200
    assert [p for _, p, _ in sim.requests] == ["/get_server_info"]  # nothing started
    assert _left(host) == []


async def test_whole_valued_floats_are_rank_counts(tmp_path):
    host = _host(tmp_path)
    with ProfilingServerSimulator(tp_size=2, server_info=b'{"tp_size": 2.0, "pp_size": null}'
                                  ) as sim:
        result = await capture(LocalTransport(), _req(sim.url, host), tmp_path / "out")
    assert result.summary.ranks == 2 and result.missing == []
