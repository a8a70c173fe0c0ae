"""SSH targets: ``user@host:port``, ``[v6]:port`` or an ~/.ssh/config alias."""

from __future__ import annotations

import re


def parse_target(spec: str) -> tuple[str | None, str, int | None]:
    """``user@host:port`` / ``host`` / ``alias`` / ``[v6]:port`` -> (user, host, port)."""
    s = spec.strip()
    if not s or s.startswith("-") or any(c.isspace() for c in s):
        raise ValueError(f"invalid ssh target {spec!r}: expected user@host[:port] or an alias")
    user, _, rest = s.rpartition("@") if "@" in s else (None, "", s)
    host, port = rest, None
    if rest.startswith("["):
        m = re.match(r"^\[([^\]]+)\](?::(\d+))?$", rest)
        if not m:
            raise ValueError(f"invalid ssh target {spec!r}")
        host, port = m.group(1), int(m.group(2)) if m.group(2) else None
    elif rest.count(":") == 1:
        host, _, p = rest.partition(":")
        if not p.isdigit():
            raise ValueError(f"invalid port in ssh target {spec!r}")
        port = int(p)
    if not host or (user is not None and not user):
        raise ValueError(f"invalid ssh target {spec!r}: expected user@host[:port] or an alias")
    if port is not None and not 0 < port < 65536:
        raise ValueError(f"invalid port in ssh target {spec!r}")
    return user, host, port
