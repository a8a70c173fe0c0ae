"""Prometheus chooses where to look, SSH digs: a host picked in the Fleet
view joins the cockpit as an SSH host (samples, probes, logs, gap).

How it is reached: its ``[[hosts]]`` entry when the config has one by that
name; else ``[fleet] ssh`` with ``{host}`` replaced by the name Prometheus
gave it (default ``"{host}"``: an ssh alias or a resolvable name, so
``~/.ssh/config`` supplies user, port, keys and jump hosts), with
``[fleet] preamble``. The name comes from a Prometheus label, i.e. from the
fleet: only plain host names are accepted. Joining is
:meth:`perftriage.services.cockpit.Cockpit.dig_in`.
"""

from __future__ import annotations

import re

from perftriage.core.store.config import HostConfig

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
