"""Files on a host: make a private directory, list it with sizes, copy a file
here, remove what was made. Over SFTP on the host's SSH connection for a remote host (no shell, so
no quoting), the local filesystem for the local host."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from pathlib import Path

from perftriage.transport.base import OTHER, TransportError


class LocalFiles:
    def __init__(self, name: str = "localhost") -> None:
        self.name = name

    async def make_dir(self, parent: str, prefix: str) -> str:
        path = os.path.join(parent, f"{prefix}{secrets.token_hex(6)}")
        os.makedirs(path, mode=0o700)
        return path

    async def sizes(self, directory: str) -> dict[str, int]:
        try:
            return {e.name: e.stat().st_size for e in os.scandir(directory) if e.is_file()}
        except FileNotFoundError:
            return {}

    async def fetch(self, remote: str, local: Path) -> None:
        shutil.copyfile(remote, local)

    async def remove_dir(self, directory: str, names: list[str]) -> None:
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                os.remove(os.path.join(directory, name))
        with contextlib.suppress(OSError):
            os.rmdir(directory)

    async def close(self) -> None:
        return None


class SftpFiles:
    """SFTP over an :class:`~perftriage.transport.ssh.SSHTransport`'s connection."""

    def __init__(self, transport) -> None:
        self.transport = transport
        self.name = transport.name
        self._sftp = None

    async def _client(self):
        import asyncssh  # noqa: PLC0415

        if self._sftp is None:
            conn = await self.transport.connection()
            try:
                self._sftp = await conn.start_sftp_client()
            except (asyncssh.Error, OSError) as exc:
                raise TransportError(f"SFTP not available: {exc}", OTHER, self.name) from None
        return self._sftp

    async def make_dir(self, parent: str, prefix: str) -> str:
        import asyncssh  # noqa: PLC0415

        sftp = await self._client()
        path = f"{parent.rstrip('/')}/{prefix}{secrets.token_hex(6)}"
        try:
            await sftp.mkdir(path, asyncssh.SFTPAttrs(permissions=0o700))
        except (asyncssh.SFTPError, OSError) as exc:
            raise TransportError(f"cannot create {path}: {exc}", OTHER, self.name) from None
        return path

    async def sizes(self, directory: str) -> dict[str, int]:
        import asyncssh  # noqa: PLC0415

        sftp = await self._client()
        try:
            entries = await sftp.readdir(directory)
        except asyncssh.SFTPNoSuchFile:
            return {}
        except (asyncssh.SFTPError, OSError) as exc:
            raise TransportError(f"cannot list {directory}: {exc}", OTHER, self.name) from None
        return {e.filename: int(e.attrs.size or 0) for e in entries
                if e.filename not in (".", "..") and e.attrs.type == asyncssh.FILEXFER_TYPE_REGULAR}

    async def fetch(self, remote: str, local: Path) -> None:
        import asyncssh  # noqa: PLC0415

        sftp = await self._client()
        try:
            await sftp.get(remote, str(local))
        except (asyncssh.SFTPError, OSError) as exc:
            raise TransportError(f"cannot fetch {remote}: {exc}", OTHER, self.name) from None

    async def remove_dir(self, directory: str, names: list[str]) -> None:
        """Remove ``names`` in ``directory``, then the directory if it is empty."""
        import asyncssh  # noqa: PLC0415

        sftp = await self._client()
        for name in names:
            with contextlib.suppress(asyncssh.SFTPError):
                await sftp.remove(f"{directory.rstrip('/')}/{name}")
        with contextlib.suppress(asyncssh.SFTPError):
            await sftp.rmdir(directory)

    async def close(self) -> None:
        if self._sftp is not None:
            self._sftp.exit()
            self._sftp = None


def files_for(transport):
    """The file access that goes with a transport."""
    if getattr(transport, "connection", None) is None:
        return LocalFiles(getattr(transport, "name", "localhost"))
    return SftpFiles(transport)
