"""The hosts of a session and how to reach them.

With no configuration the only host is ``localhost`` through the local
transport. Remote hosts (SSH) register their transports here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tui.core.config import Config, HostConfig
from tui.core.probes import HostContext
from tui.transport.base import Transport
from tui.transport.local import LocalTransport

LOCALHOST = "localhost"


@dataclass
class Host:
    name: str
    config: HostConfig
    transport: Transport
    local: bool = False

    @property
    def context(self) -> HostContext:
        return HostContext(python=self.config.python)


@dataclass
class HostRegistry:
    hosts: dict[str, Host] = field(default_factory=dict)

    def add(self, host: Host) -> Host:
        self.hosts[host.name] = host
        return host

    def get(self, name: str) -> Host:
        try:
            return self.hosts[name]
        except KeyError:
            raise KeyError(f"unknown host {name!r}; known: {', '.join(self.hosts)}") from None

    @property
    def names(self) -> list[str]:
        return list(self.hosts)

    async def close(self) -> None:
        for host in self.hosts.values():
            await host.transport.close()


def local_host(config: HostConfig | None = None) -> Host:
    cfg = config or HostConfig(name=LOCALHOST)
    return Host(cfg.name, cfg, LocalTransport(cfg.name, cfg.preamble), local=True)


def build_registry(config: Config, only: list[str] | None = None) -> HostRegistry:
    """localhost plus every configured host (``only`` restricts to those names)."""
    reg = HostRegistry()
    local_cfg = config.host(LOCALHOST)
    if not only or LOCALHOST in only:
        reg.add(local_host(local_cfg))
    for hc in config.hosts:
        if hc.name == LOCALHOST or (only and hc.name not in only):
            continue
        if hc.ssh is None:
            reg.add(Host(hc.name, hc, LocalTransport(hc.name, hc.preamble), local=True))
        else:
            from tui.transport.ssh import SSHTransport  # noqa: PLC0415 - optional until used

            reg.add(Host(hc.name, hc, SSHTransport.from_config(hc)))
    return reg
