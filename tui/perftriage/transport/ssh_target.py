"""SSH targets (``user@host:port``, aliases) and the one-line reasons a
connection attempt fails with."""

from __future__ import annotations

import socket

import asyncssh

# parse_target is pure (no asyncssh): it lives in core, where the config's checks use it too
from perftriage.core.parse.ssh_target import parse_target  # noqa: F401 - re-exported
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
