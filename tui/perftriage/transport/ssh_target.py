"""SSH targets (``user@host:port``, aliases) and the one-line reasons a
connection attempt fails with."""

from __future__ import annotations

import re
import socket

import asyncssh

from perftriage.transport.base import (
    AUTH,
    CHANNEL_LIMIT,
    DNS,
    HOST_KEY_UNKNOWN,
    LOST,
    OTHER,
    REFUSED,
    TIMEOUT,
    TransportError,
)


# --- targets ------------------------------------------------------------------

_TARGET = re.compile(r"^(?:(?P<user>[^@\s]+)@)?(?P<host>\[[^\]\s]+\]|[^@:\s\[\]]+|[0-9a-fA-F:]+)"
                     r"(?::(?P<port>\d+))?$")


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


# --- error classification ---------------------------------------------------------


def classify(exc: BaseException, where: str, *, timeout: float | None = None,
             host: str | None = None) -> TransportError:
    """One :class:`TransportError` with a one-line reason for a connect failure."""
    if isinstance(exc, TransportError):
        return exc
    if isinstance(exc, asyncssh.PermissionDenied):
        return TransportError(f"authentication failed for {where} ({exc.reason or 'no key accepted'})",
                              AUTH, host)
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return TransportError(f"host key for {where} could not be verified: {exc.reason}",
                              HOST_KEY_UNKNOWN, host)
    if isinstance(exc, (asyncssh.ConnectionLost, ConnectionResetError, BrokenPipeError)):
        return TransportError(f"connection to {where} lost", LOST, host)
    if isinstance(exc, asyncssh.DisconnectError):
        return TransportError(f"{where} disconnected: {exc.reason or type(exc).__name__}",
                              LOST, host)
    if isinstance(exc, socket.gaierror):
        return TransportError(f"name not resolved: {where} ({exc.strerror or exc})", DNS, host)
    if isinstance(exc, ConnectionRefusedError):
        return TransportError(f"connection refused by {where}", REFUSED, host)
    if isinstance(exc, TimeoutError):
        after = f" after {timeout:g}s" if timeout else ""
        return TransportError(f"connect timeout{after} to {where}", TIMEOUT, host)
    if isinstance(exc, asyncssh.ChannelOpenError):
        return TransportError(
            f"channel limit: {where} refused to open a channel ({exc.reason}); "
            "lower max_channels for this host or raise sshd MaxSessions",
            CHANNEL_LIMIT, host)
    if isinstance(exc, OSError):
        return TransportError(f"cannot connect to {where}: {exc.strerror or exc}", OTHER, host)
    text = str(exc) or type(exc).__name__
    return TransportError(f"{where}: {text}".splitlines()[0], OTHER, host)
