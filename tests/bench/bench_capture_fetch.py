"""How fast a capture's rank files come back, by each path:
``PYTHONPATH=tui:. python3 -m tests.bench.bench_capture_fetch [--mib 64] [-n 3]``.

One incompressible file (a rank trace is gzip: it does not compress again)
in a capture directory made by perftriage, fetched with every check of
``transport/capture_dir.py`` by: the local disk (baseline: ``shutil.copyfile``,
which checks nothing), SFTP to a loopback OpenSSH server and the exec channel
(``python3`` on the host, base64, 4 MiB per call) to one without an ``sftp``
subsystem (baseline for both: ``ssh host cat FILE`` with the OpenSSH client,
which checks nothing either). Cases are sampled in turn, so they share the
machine's load; medians of ``-n`` runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from tests.bench.table import print_table


async def _fetcher(files, parent: Path, data: bytes):
    directory = await files.make_dir(str(parent), "perftriage-profile-")
    Path(directory, "r-TP-0.trace.json.gz").write_bytes(data)
    await files.listing(directory)  # pins it, as a capture's wait does
    return directory


def main() -> None:
    from perftriage.transport.files import open_files
    from perftriage.transport.local import LocalTransport
    from perftriage.transport.ssh import SSHTransport
    from tests.support.sshd import SshServer

    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("-n", type=int, default=3)
    args = ap.parse_args()
    data = os.urandom(args.mib << 20)
    samples: dict[str, list[float]] = {}

    def timed(case: str, t0: float) -> None:
        samples.setdefault(case, []).append(time.perf_counter() - t0)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with SshServer(root / "sftp") as with_sftp, \
                SshServer(root / "exec", sftp=False) as without:

            async def run_all(i: int) -> None:
                for label, transport in (
                        ("local", LocalTransport()),
                        ("SFTP", SSHTransport("s", with_sftp.alias,
                                              ssh_config=with_sftp.ssh_config)),
                        ("exec", SSHTransport("e", without.alias,
                                              ssh_config=without.ssh_config))):
                    files = await open_files(transport)
                    assert files.via == label, files.via
                    directory = await _fetcher(files, root, data)
                    src = f"{directory}/r-TP-0.trace.json.gz"
                    out = root / f"{label}-{i}"
                    t0 = time.perf_counter()
                    await files.fetch(directory, "r-TP-0.trace.json.gz", len(data), out)
                    timed(f"perftriage, {label}", t0)
                    assert out.read_bytes() == data
                    base = root / f"{label}-{i}.base"
                    t0 = time.perf_counter()
                    if label == "local":
                        shutil.copyfile(src, base)
                        timed("baseline: shutil.copyfile (no checks)", t0)
                    else:
                        server = with_sftp if label == "SFTP" else without
                        with base.open("wb") as fh:
                            subprocess.run([*server.ssh_argv(), "cat", src], stdout=fh, check=True)
                        timed(f"baseline: ssh cat ({label} server, no checks)", t0)
                    await files.remove_dir(directory)
                    await files.close()
                    await transport.close()
                    out.unlink()
                    base.unlink()

            for i in range(args.n):
                asyncio.run(run_all(i))
    rows = []
    for case, values in samples.items():
        s = statistics.median(values)
        rows.append((case, f"{s:.2f}", f"{args.mib / s:.0f} MiB/s"))
    print_table(f"Fetching one {args.mib} MiB rank file (median of {args.n})", "seconds", rows)


if __name__ == "__main__":
    main()
