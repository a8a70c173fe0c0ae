"""Prometheus chooses where to look, SSH digs: a host picked in the Fleet
view joins the cockpit as an SSH host (samples, probes, logs, gap).

How it is reached: its ``[[hosts]]`` entry when the config has one by that
name; else ``[fleet] ssh`` with ``{host}`` replaced by the name Prometheus
gave it (default ``"{host}"``: an ssh alias or a resolvable name, so
``~/.ssh/config`` supplies user, port, keys and jump hosts), with
``[fleet] preamble``. The name comes from a Prometheus label, i.e. from the
fleet: only plain host names are accepted.
"""

from __future__ import annotations

import re

from perftriage.core.store.config import HostConfig
from perftriage.services.hosts.registry import make_host

_HOST_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}\Z")


class DigInError(ValueError):
    """The host cannot join (not a plain host name, or a bad ssh target)."""


def fleet_host_config(config, name: str) -> HostConfig:
    if (hc := config.host(name)) is not None:
        return hc
    if not _HOST_NAME.match(name):
        raise DigInError(f"{name!r} is not a plain host name; add a [[hosts]] entry for it")
    return HostConfig(name=name, ssh=config.fleet.ssh.replace("{host}", name),
                      preamble=config.fleet.preamble)


def dig_in(cockpit, name: str) -> bool:
    """Add fleet host ``name`` to ``cockpit`` as an SSH host; False when it is
    there already. Raises DigInError with a one-line reason."""
    if name in cockpit.registry.hosts:
        return False
    hc = fleet_host_config(cockpit.config, name)
    try:
        host = make_host(hc, cockpit.registry.ssh)
    except ValueError as exc:
        raise DigInError(f"{name}: {exc}") from None
    cockpit.add_host(host)
    return True
