"""The hosts of a session and how to reach them.

With no configuration the only host is ``localhost`` through the local
transport. Remote hosts (SSH) register their transports here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from perftriage.core.store.config import Config, HostConfig
from perftriage.core.store.investigations import shown_name
from perftriage.core.probes import HostContext
from perftriage.transport.base import Transport
from perftriage.transport.local import LocalTransport
from perftriage.transport.ssh_options import SshOptions

LOCALHOST = "localhost"


@dataclass
class Host:
    name: str
    config: HostConfig
    transport: Transport
    local: bool = False

    @property
    def context(self) -> HostContext:
        return HostContext(python=self.config.python, local=self.local)


@dataclass
class HostRegistry:
    hosts: dict[str, Host] = field(default_factory=dict)
    ssh: SshOptions = SshOptions()  # how its SSH hosts, and any that join later, are reached

    def add(self, host: Host) -> Host:
        self.hosts[host.name] = host
        return host

    def remove(self, name: str) -> Host | None:
        """Forget ``name`` (the caller closes its transport); None when unknown."""
        return self.hosts.pop(name, None)

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

    @property
    def remote(self) -> list[Host]:
        return [h for h in self.hosts.values() if not h.local]


def local_host(config: HostConfig | None = None) -> Host:
    cfg = config or HostConfig(name=LOCALHOST)
    return Host(cfg.name, cfg, LocalTransport(cfg.name, cfg.preamble), local=True)


def build_registry(config: Config, only: list[str] | None = None, *,
                   ssh: SshOptions = SshOptions()) -> HostRegistry:
    """localhost plus every configured host (``only`` restricts to those names)."""
    reg = HostRegistry(ssh=ssh)
    local_cfg = config.host(LOCALHOST)
    if not only or LOCALHOST in only:
        reg.add(local_host(local_cfg))
    for hc in config.hosts:
        if hc.name == LOCALHOST or (only and hc.name not in only):
            continue
        reg.add(make_host(hc, ssh))
    return reg


def make_host(hc: HostConfig, ssh: SshOptions = SshOptions()) -> Host:
    """The host for one config entry: local when it has no ``ssh`` target."""
    if hc.ssh is None:
        return Host(hc.name, hc, LocalTransport(hc.name, hc.preamble), local=True)
    from perftriage.transport.ssh import SSHTransport  # noqa: PLC0415 - asyncssh only when used

    return Host(hc.name, hc, SSHTransport.from_config(hc, ssh))


def configured_by_ssh_target(config: Config, spec: str) -> HostConfig | None:
    """The configured host reached as ``spec``: its ``ssh`` is exactly
    ``spec`` or ``user@spec``, so ``--host ALIAS`` keeps that host's settings
    (preamble, python) instead of making a bare ad-hoc host."""
    return next((h for h in config.hosts
                 if h.ssh and spec in (h.ssh, h.ssh.partition("@")[2])), None)


class HostSpecError(ValueError):
    """A ``-H`` spec that is neither a config name, an alias nor user@host[:port]."""


def _expand_nodesets(specs) -> list[str]:
    """``node[01-64]`` -> node01 ... node64 (ClusterShell node-set syntax); other specs as given."""
    from perftriage.core.fleet.nodeset import NodeSetError, expand  # noqa: PLC0415

    out: list[str] = []
    for spec in (s.strip() for s in specs):
        if "[" in spec and "@" not in spec:
            try:
                out.extend(expand(spec))
                continue
            except NodeSetError as exc:
                raise HostSpecError(f"{spec!r}: {exc}") from None
        out.append(spec)
    return out


def resolve_hosts(
    config: Config,
    specs: list[str] | tuple[str, ...] | None = None,
    *,
    ssh: SshOptions = SshOptions(),
    with_localhost: bool | None = None,
) -> HostRegistry:
    """The hosts a command works on.

    No ``specs``: localhost plus every configured host. With specs (``-H``,
    repeatable): exactly those, each a config name (or a node set of them,
    ``node[01-64]``), ``localhost``, an ssh alias or ``user@host[:port]``.
    A spec that is a configured host's ``ssh``
    target uses that host's settings; other ad-hoc hosts get default settings.
    ``with_localhost`` forces localhost in (True) or out (False).
    ``ssh``: how SSH hosts are reached (kept on the registry).
    """
    if not specs:
        reg = build_registry(config, ssh=ssh)
        if with_localhost is False:
            reg.hosts.pop(LOCALHOST, None)
        return reg
    reg = HostRegistry(ssh=ssh)
    if with_localhost:
        reg.add(local_host(config.host(LOCALHOST)))
    for spec in _expand_nodesets(specs):
        if not spec.isprintable():  # a control, a bidi mark, a byte that was not UTF-8
            raise HostSpecError(f"host {shown_name(spec)}: not a host name (it holds a control "
                                "character or a byte that is not UTF-8)")
        if spec == LOCALHOST:
            reg.add(local_host(config.host(LOCALHOST)))
            continue
        hc = config.host(spec) or configured_by_ssh_target(config, spec)
        if hc is None:
            # asyncssh (and the SSH code) only loads for an SSH host
            from perftriage.transport.ssh import parse_target  # noqa: PLC0415

            try:
                parse_target(spec)
            except ValueError as exc:
                raise HostSpecError(
                    f"{exc}; known hosts: {', '.join([LOCALHOST, *(h.name for h in config.hosts)])}"
                ) from None
            hc = HostConfig(name=spec, ssh=spec)
        reg.add(make_host(hc, ssh))
    return reg
