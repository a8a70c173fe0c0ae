"""How SSH hosts are reached: one value, given once.

The command line's ``--ssh-config`` and ``--accept-new-host-keys`` become one
:class:`SshOptions`; the host registry keeps it, so every SSH host of a run
uses it, also one that joins later (picked in the Fleet view). Importing this
module does not load asyncssh.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SshOptions:
    """``config``: an ssh_config file used instead of ``~/.ssh/config``.
    ``accept_new_host_keys``: record a first-seen host key in known_hosts
    (like OpenSSH's accept-new); a changed key is always refused. A host's
    own ``accept_new_host_key = true`` in the config also accepts its key."""

    config: Path | None = None
    accept_new_host_keys: bool = False
