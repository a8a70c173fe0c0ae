"""Many hosts out of one loopback sshd: N ``Host`` aliases (``node01`` ...)
of the same server in a generated ssh client config, and a perftriage
config listing them, for fan-out tests and benchmarks.

Give the server ``MaxStartups`` room for every handshake at once (tests/support/sshd.py
starts sshd with ``MaxStartups 100:30:200``).
"""

from __future__ import annotations

from pathlib import Path

from tests.support.sshd import SshServer


def alias_names(n: int) -> list[str]:
    width = max(2, len(str(n)))
    return [f"node{i:0{width}d}" for i in range(1, n + 1)]


def write_aliases(server: SshServer, n: int, root: Path,
                  preambles: dict[str, str] | None = None) -> tuple[Path, Path, list[str]]:
    """(ssh config, perftriage config, host names) for ``n`` aliases of ``server``."""
    names = alias_names(n)
    ssh_config = root / "ssh_config_aliases"
    ssh_config.write_text("".join(
        f"Host {name}\n"
        f"    HostName {server.host}\n"
        f"    Port {server.port}\n"
        f"    User {server.user}\n"
        f"    IdentityFile {server.client_key}\n"
        f"    UserKnownHostsFile {server.known_hosts}\n"
        f"    StrictHostKeyChecking yes\n"
        f"    IdentitiesOnly yes\n" for name in names))
    config = root / "config_aliases.toml"
    preambles = preambles or {}
    config.write_text("".join(
        f'[[hosts]]\nname = "{name}"\nssh = "{name}"\n'
        + (f'preamble = "{preambles[name]}"\n' if name in preambles else "") + "\n"
        for name in names))
    return ssh_config, config, names
