"""Reliability trials of the profile capture against a hostile server (issue
31, items 1-2; issue 35, item 6), rows of ``tests/bench/reliability_trials.py``.

Every trial runs the real capture against the SGLang simulator, whose
``plant`` hook does what a hostile server does to its directory
(``tests/support/hostile_capture.py``), through the three ways files come
back: the local disk, SFTP to a real loopback OpenSSH server, and the exec
channel of one configured without an ``sftp`` subsystem. A trial holds when
the capture ends with a summary or a one-line ``CaptureFailed`` (never
another exception), within its deadline, with nothing outside perftriage's
directory read, changed or removed, and perftriage's directory gone.

Run these rows alone: ``PYTHONPATH=tui:. python3 -m tests.bench.reliability_trials R3.1
R3.2 35.6``.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


DEADLINE_S = 30.0  # a trial's capture must end by then (its own timeout is 8 s)


@contextlib.contextmanager
def _transports() -> Iterator[list[tuple[str, object]]]:
    """(path name, a factory of its transport) for local, SFTP and exec."""
    from perftriage.transport.local import LocalTransport
    from perftriage.transport.ssh import SSHTransport
    from tests.support.sshd import SshServer

    with tempfile.TemporaryDirectory() as tmp:
        with SshServer(Path(tmp) / "sftp") as with_sftp, \
                SshServer(Path(tmp) / "exec", sftp=False) as without:
            yield [("local", LocalTransport),
                   ("SFTP", lambda: SSHTransport("t", with_sftp.alias,
                                                 ssh_config=with_sftp.ssh_config)),
                   ("exec", lambda: SSHTransport("t", without.alias,
                                                 ssh_config=without.ssh_config))]


async def _capture(make, sim_kw: dict, req_kw: dict, out: Path, parent: Path,
                   prepare=lambda sim: None):
    """(result or CaptureFailed, seconds); any other exception propagates."""
    from perftriage.services.profile.capture import CaptureFailed, CaptureRequest, capture
    from tests.support.sglang_profile_simulator import ProfilingServerSimulator

    transport = make()
    t0 = time.monotonic()
    try:
        with ProfilingServerSimulator(**sim_kw) as sim:
            prepare(sim)
            req = CaptureRequest(url=sim.url, remote_parent=str(parent),
                                 **{"poll": 0.1, "settle": 0.5, "steps": 2, "timeout": 8,
                                    **req_kw})
            try:
                return await asyncio.wait_for(capture(transport, req, out), DEADLINE_S), \
                    time.monotonic() - t0
            except CaptureFailed as exc:
                return exc, time.monotonic() - t0
    finally:
        await transport.close()  # type: ignore[attr-defined]


def directory_trials() -> tuple[int, int, str]:
    from tests.support.hostile_capture import PLANTS, Scene, colliding_names

    tried = held = 0
    worst = 0.0
    with _transports() as paths:
        for via, make in paths:
            for name, (plant, what) in [*PLANTS.items(), ("colliding names", (None, None))]:
                tried += 1
                with tempfile.TemporaryDirectory() as tmp:
                    scene = Scene(Path(tmp))
                    sim: dict[str, object] = {"tp_size": 2, "silent_ranks": (0,)} if what \
                        else {"tp_size": 1}
                    sim["plant"] = plant(scene) if plant else colliding_names
                    req = {"ranks": 4} if plant is None else {}
                    try:
                        got, took = asyncio.run(_capture(make, sim, req, scene.out, scene.host))
                    except Exception as exc:  # noqa: BLE001 - a crash is what this counts
                        print(f"  {via} {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
                        continue
                    worst = max(worst, took)
                    ok = scene.intact() and not scene.leaked() and scene.left() == []
                    files = getattr(got, "files", [])
                    if plant is None:  # three names that are one once made safe: 4 files
                        ok = ok and len(set(files)) == 4
                    elif what:  # rank 0 refused and named, rank 1 read
                        ok = ok and len(files) == 1 and what in getattr(got, "refused",
                                                                        {}).values()
                    held += ok
                    if not ok:
                        print(f"  {via} {name}: did not hold ({str(got)[:200]})", file=sys.stderr)
    return tried, held, (f"{len(PLANTS) + 1} attacks x local/SFTP/exec; slowest {worst:.1f} s; "
                         "no secret copied, nothing outside removed, no directory left")


def failure_trials() -> tuple[int, int, str]:
    from perftriage.services.profile.capture import CaptureFailed
    from tests.support.hostile_capture import Scene

    def garbage(out: Path, stem: str) -> None:
        (out / f"{stem}-TP-0.trace.json.gz").write_bytes(b"\x1f\x8b not a gzip")

    def busy(sim) -> None:
        sim.profiling = {"already": True}  # "Profiling is already in progress"

    failures: dict[str, tuple[dict, dict, object]] = {"idle": ({"busy": False}, {"idle_after": 0.6}, None),
                "start refused": ({}, {}, busy),
                "timeout": ({"chunk_delay_s": 0.4}, {"settle": 3.0, "timeout": 1.5}, None),
                "bad trace": ({"silent_ranks": (0,), "plant": garbage}, {}, None)}
    tried = held = 0
    with _transports() as paths:
        for via, make in paths:
            for name, (sim, req, prepare) in failures.items():
                tried += 1
                with tempfile.TemporaryDirectory() as tmp:
                    scene = Scene(Path(tmp))
                    try:
                        got, _ = asyncio.run(_capture(make, {"tp_size": 1, **sim}, req,
                                                      scene.out, scene.host,
                                                      prepare or (lambda sim: None)))
                    except Exception as exc:  # noqa: BLE001 - a crash is what this counts
                        print(f"  {via} {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
                        continue
                    held += isinstance(got, CaptureFailed) and scene.left() == []
    return tried, held, "idle, start refused, never complete, unreadable trace x 3 paths"


def server_info_trials() -> tuple[int, int, str]:
    from perftriage.services.profile.capture import CaptureFailed, CaptureRequest, capture
    from perftriage.transport.local import LocalTransport
    from tests.support.hostile_capture import SERVER_INFO
    from tests.support.sglang_profile_simulator import ProfilingServerSimulator

    tried = held = 0
    worst = 0.0
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with tempfile.TemporaryDirectory() as tmp:
        for body, says in SERVER_INFO:
            tried += 1
            with ProfilingServerSimulator(tp_size=1, server_info=body) as sim:
                t0 = time.monotonic()
                try:
                    asyncio.run(capture(LocalTransport(), CaptureRequest(
                        url=sim.url, remote_parent=tmp, timeout=8), Path(tmp) / "out"))
                except CaptureFailed as exc:
                    held += says in str(exc) and "\n" not in str(exc)
                except Exception as exc:  # noqa: BLE001
                    print(f"  {body[:40]!r}: {type(exc).__name__}", file=sys.stderr)
                worst = max(worst, time.monotonic() - t0)
    grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    return tried, held, (f"10^18, 1e300, Infinity, 200k-deep, -5, 0, 2.5, \"2\", true ...: "
                         f"one line naming the bound; slowest {worst:.2f} s, RSS grew "
                         f"{grew:.0f} MiB")


def no_sftp_trials() -> tuple[int, int, str]:
    """A plain capture through each path: the exec path is the fallback."""
    from tests.support.hostile_capture import Scene

    tried = held = 0
    notes = []
    with _transports() as paths:
        for via, make in paths:
            tried += 1
            with tempfile.TemporaryDirectory() as tmp:
                scene = Scene(Path(tmp))
                got, took = asyncio.run(_capture(make, {"tp_size": 2}, {}, scene.out, scene.host))
                ok = getattr(got, "via", None) == via and got.summary.ranks == 2  # type: ignore[union-attr]
                held += ok and scene.left() == []
                notes.append(f"{via} {took:.1f} s")
    return tried, held, "a 2-rank capture through each path, each says its path: " + \
        ", ".join(notes)


TRIALS = [
    ("R3.1 capture: a hostile server's directory (symlinked directory, rank links to a secret "
     "and to a trace, FIFO, hard link, links to remove; R3.2 colliding names)",
     directory_trials),
    ("R3.1 capture: every failure path removes perftriage's directory", failure_trials),
    ("R3.2 capture: hostile /get_server_info answers", server_info_trials),
    ("35.6 capture: local, SFTP, and an sshd without SFTP (exec)", no_sftp_trials),
]

