"""A real OpenSSH server on 127.0.0.1 for tests and benchmarks.

Starts ``/usr/sbin/sshd -D`` with its own config, a temporary host key, a
temporary client key (authorised for the current user), a known_hosts file
holding the server key, and an ssh client config with a Host alias. Stops
it by PID. Nothing is installed here: the README's test command installs
``openssh-server``. When ``CI=true`` a missing sshd is a failure, not a skip.
"""

from __future__ import annotations

import getpass
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = os.environ.get("PERFTRIAGE_TEST_SSHD", "/usr/sbin/sshd")
SSH_KEYGEN = shutil.which("ssh-keygen") or "/usr/bin/ssh-keygen"


def sshd_available() -> bool:
    return os.path.exists(SSHD) and os.path.exists(SSH_KEYGEN)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path: Path, kind: str = "ed25519") -> Path:
    subprocess.run(
        [SSH_KEYGEN, "-q", "-t", kind, "-N", "", "-C", "perftriage-test", "-f", str(path)],
        check=True,
    )
    return path


def child_pids(ppid: int) -> list[int]:
    """PIDs whose parent is ``ppid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == ppid:
            found.append(int(entry.name))
    return found


@dataclass
class SshServer:
    root: Path
    port: int = field(default_factory=free_port)
    rc_sleep: float = 0.0  # seconds a non-interactive bash start costs (slow ~/.bashrc)
    max_sessions: int = 10  # OpenSSH's default MaxSessions
    env: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    alias: str = "perftriage-test"
    sftp: bool = True  # False: no sftp Subsystem line (as dropbear and many containers)
    proc: subprocess.Popen | None = None

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.user = getpass.getuser()
        self.host_key = keygen(self.root / "ssh_host_ed25519_key")
        self.client_key = keygen(self.root / "id_ed25519")
        self.authorized_keys = self.root / "authorized_keys"
        self.authorized_keys.write_text((self.root / "id_ed25519.pub").read_text())
        self.authorized_keys.chmod(0o600)
        self.known_hosts = self.root / "known_hosts"
        self.write_known_hosts()
        self.rc_file = self.root / "slow_bashrc"
        self.rc_file.write_text(f"sleep {self.rc_sleep}\n" if self.rc_sleep else ":\n")
        self.ssh_config = self.root / "ssh_config"
        self.ssh_config.write_text(
            f"Host {self.alias}\n"
            f"    HostName {self.host}\n"
            f"    Port {self.port}\n"
            f"    User {self.user}\n"
            f"    IdentityFile {self.client_key}\n"
            f"    UserKnownHostsFile {self.known_hosts}\n"
            f"    StrictHostKeyChecking yes\n"
            f"    IdentitiesOnly yes\n"
        )
        self.config = self.root / "sshd_config"
        env = {"BASH_ENV": str(self.rc_file), **self.env}
        if "HOME" not in env:
            # Logins get a HOME of their own whose .bashrc only sets this
            # process's PATH: the machine's ~/.bashrc may run `pyenv init`,
            # whose rehash lock serialises logins, and a login killed during it
            # (the fault and orphan tests kill them) leaves the lock behind:
            # every later login then stalls 60 s. Seen from a fresh clone run
            # without a venv: 19 SSH tests failed "remote shell did not start".
            home = self.root / "home"
            home.mkdir(exist_ok=True)
            path = env.get("PATH") or os.environ.get("PATH", "")  # a PATH given in env wins
            (home / ".bashrc").write_text(f"export PATH={shlex.quote(path)}\n")
            env["HOME"] = str(home)
        if self.rc_sleep:
            # bash started by sshd reads ~/.bashrc, not BASH_ENV: point HOME at a
            # directory whose .bashrc sleeps, then restores HOME and sources the
            # real ~/.bashrc (so only the delay differs from a normal server).
            home = env.get("HOME") or os.path.expanduser("~")
            rc_home = self.root / "rc_home"
            rc_home.mkdir(exist_ok=True)
            (rc_home / ".bashrc").write_text(
                f"sleep {self.rc_sleep}\nexport HOME={home}\n"
                f'[ -f "$HOME/.bashrc" ] && . "$HOME/.bashrc"\n'
            )
            env["HOME"] = str(rc_home)
        set_env = " ".join(f'"{k}={v}"' for k, v in env.items())
        self.config.write_text(
            f"Port {self.port}\n"
            f"ListenAddress {self.host}\n"
            f"HostKey {self.host_key}\n"
            f"PidFile {self.root / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {self.authorized_keys}\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            "PubkeyAuthentication yes\n"
            "PermitRootLogin prohibit-password\n"
            "StrictModes no\n"
            "UsePAM no\n"
            "UseDNS no\n"
            f"MaxSessions {self.max_sessions}\n"
            "MaxStartups 100:30:200\n"
            "LogLevel ERROR\n"
            f"SetEnv {set_env}\n"
            + ("Subsystem sftp internal-sftp\n" if self.sftp else "")
        )

    @property
    def spec(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    def write_known_hosts(self) -> None:
        pub = (self.root / "ssh_host_ed25519_key.pub").read_text().split()
        self.known_hosts.write_text(f"[{self.host}]:{self.port} {pub[0]} {pub[1]}\n")

    def start(self) -> "SshServer":
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation dir
        self.log = open(self.root / "sshd.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(self.config)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"sshd exited with {self.proc.returncode}: "
                    + (self.root / "sshd.log").read_text()[-2000:]
                )
            try:
                with socket.create_connection((self.host, self.port), timeout=0.2) as s:
                    s.settimeout(2)
                    if s.recv(4).startswith(b"SSH-"):
                        return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("sshd did not start listening within 10 s")

    def stop(self) -> None:
        if self.proc is None:
            return
        # Kill the listener and every session it forked: its process group,
        # and each connection's sshd, which setsid()s into its own group.
        for pid in child_pids(self.proc.pid):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None
        self.log.close()

    def restart(self) -> None:
        self.stop()
        self.start()

    def ssh_argv(self, *extra: str) -> list[str]:
        """OpenSSH client arguments that reach this server (for baselines)."""
        return ["ssh", "-F", str(self.ssh_config), *extra, self.alias]

    def __enter__(self) -> "SshServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
