"""Carry one of perftriage's own files (its py-spy) to a host for one probe:
a fresh private directory made over SFTP (``mkdir`` fails on an existing
name: nothing planted is reused), 0700, the file created exclusively in it,
0700, its sha256 known here; removed again after the probe.

What runs it checks, on the host, before it runs: the directory is a real
directory of the SSH user with mode 0700 (no link), the file a regular file
of the SSH user no one else can write, with one link and the sha256 sent
(``core/host_scripts/stacks_pyspy.py``): a file anyone else could have written
or swapped is never run.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from perftriage.transport.base import OTHER, TransportError

CHUNK = 1 << 20
REMOTE_TMP = "/tmp"


@dataclass(frozen=True)
class Carried:
    directory: str  # the private directory on the host
    path: str  # the file in it
    sha256: str


@lru_cache(maxsize=4)
def sha256_of(path: str, size: int, mtime_ns: int) -> str:
    """The file's sha256 (cached per path, size and mtime)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _digest(local: Path) -> str:
    st = local.stat()
    return sha256_of(str(local), st.st_size, st.st_mtime_ns)


async def carry(transport, local: Path, prefix: str) -> Carried:
    """``local`` copied into a new private directory on the SSH host."""
    import asyncssh  # noqa: PLC0415

    digest = _digest(local)
    directory = f"{REMOTE_TMP}/{prefix}{secrets.token_hex(8)}"
    path = f"{directory}/{local.name}"
    conn = await transport.connection()
    try:
        async with conn.start_sftp_client() as sftp:
            await sftp.mkdir(directory, asyncssh.SFTPAttrs(permissions=0o700))
            try:
                await sftp.chmod(directory, 0o700)  # whatever the server's umask did
                flags = asyncssh.FXF_WRITE | asyncssh.FXF_CREAT | asyncssh.FXF_EXCL
                async with sftp.open(path, flags, asyncssh.SFTPAttrs(permissions=0o700),
                                     encoding=None) as remote:
                    with open(local, "rb") as f:
                        for block in iter(lambda: f.read(CHUNK), b""):
                            await remote.write(block)
            except BaseException:
                with contextlib.suppress(Exception):
                    await sftp.rmtree(directory, ignore_errors=True)
                raise
    except (asyncssh.Error, OSError) as exc:
        raise TransportError(f"cannot carry {local.name} to the host over SFTP: {exc}", OTHER,
                             getattr(transport, "name", None)) from None
    return Carried(directory, path, digest)


async def remove(transport, carried: Carried) -> None:
    """The carried directory gone (the probe's script removes it too)."""
    import asyncssh  # noqa: PLC0415

    with contextlib.suppress(asyncssh.Error, OSError, TransportError):
        conn = await transport.connection()
        async with conn.start_sftp_client() as sftp:
            await sftp.rmtree(carried.directory, ignore_errors=True)
