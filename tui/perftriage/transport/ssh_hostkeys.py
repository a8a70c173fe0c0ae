"""Host key checking for the SSH transport.

Host keys are always verified against known_hosts (never
``known_hosts=None``). An unknown key is refused with a message saying how
to accept it; ``accept_new`` records a first-seen key in the known_hosts
file (asyncssh never writes it) like OpenSSH's
``StrictHostKeyChecking=accept-new``; a changed key is always refused.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import asyncssh

from perftriage.transport.base import HOST_KEY_CHANGED, HOST_KEY_UNKNOWN, TransportError

DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts")


def known_hosts_name(host: str, port: int | None) -> str:
    return host if port in (None, 22) else f"[{host}]:{port}"


def accept_keys_command(target: str, ssh_configs: list[str] | tuple = ()) -> str:
    """The command that records ``target``'s first-seen key (and checks it)."""
    words = ["perftriage", "hosts", "--check", "--accept-new-host-keys", "-H", target]
    if ssh_configs:
        words += ["--ssh-config", ssh_configs[0]]
    return " ".join(shlex.quote(w) for w in words)


class HostKeys:
    """The known_hosts files of one host and what was wrong with its key."""

    def __init__(self, name: str, override: Path | None, accept_new: bool,
                 accept_command: str | None = None) -> None:
        self.name = name
        self.override = override
        self.accept_new = accept_new
        # a command that records this host's key (named in the refusal)
        self.accept_command = accept_command
        self.files: list[Path] = []
        # why the last key was refused (asyncssh itself only says "not verifiable")
        self.problem: TransportError | None = None

    def load(self, opts: asyncssh.SSHClientConnectionOptions) -> asyncssh.SSHKnownHosts:
        """The trusted keys for a connect with ``opts`` (never None: always verified)."""
        self.files = self._files(opts)
        text = "\n".join(p.read_text(encoding="utf-8", errors="replace")
                         for p in self.files if p.is_file())
        self.problem = None
        return asyncssh.import_known_hosts(text)

    def _files(self, opts: asyncssh.SSHClientConnectionOptions) -> list[Path]:
        if self.override is not None:
            return [self.override]
        files = opts.known_hosts
        if isinstance(files, (list, tuple)) and files:
            return [Path(f).expanduser() for f in files]
        return [DEFAULT_KNOWN_HOSTS.expanduser()]

    def untrusted(self, known: asyncssh.SSHKnownHosts, host: str, addr: str, port: int,
                  key: asyncssh.SSHKey) -> bool:
        """Called only for a key that known_hosts does not trust: accept it?"""
        entry = known_hosts_name(host, port)
        files = ", ".join(str(p) for p in self.files)
        fingerprint = key.get_fingerprint()
        trusted = known.match(host, addr, port if port != 22 else None)[0]
        if trusted:
            self.problem = TransportError(
                f"HOST KEY CHANGED for {entry}: the server now offers {key.get_algorithm()} "
                f"{fingerprint}, which does not match {files}; this may be a man-in-the-middle "
                f"attack, so the connection is refused (if the change is expected, remove the "
                f"old key with: ssh-keygen -R {shlex.quote(entry)})",
                HOST_KEY_CHANGED, self.name)
            return False
        if not self.accept_new:
            how = (f"run: {self.accept_command}" if self.accept_command
                   else "pass --accept-new-host-keys")
            self.problem = TransportError(
                f"host key unknown for {entry} ({key.get_algorithm()} {fingerprint}; not in "
                f"{files}), so perftriage did not log in; to trust it on first use {how} "
                f"(or set accept_new_host_key = true for this host)",
                HOST_KEY_UNKNOWN, self.name)
            return False
        try:
            self._record(entry, key)
        except OSError as exc:
            self.problem = TransportError(
                f"could not record the host key of {entry} in {self.files[0]}: {exc}",
                HOST_KEY_UNKNOWN, self.name)
            return False
        return True

    def _record(self, entry: str, key: asyncssh.SSHKey) -> None:
        path = self.files[0]
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        algo, blob = key.export_public_key("openssh").decode().split()[:2]
        prefix = ""
        if path.is_file():
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):
                prefix = "\n"
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{prefix}{entry} {algo} {blob}\n")
