"""The per-host sources every cockpit runs: the sampler (NVML locally, one
streaming nvidia-smi and one /proc loop over SSH) and, for transports that
keep their own connection, the connection itself (its state is what the
Hosts pane shows first). All are :class:`~perftriage.services.sources.base.Source`s
the Cockpit keeps in its list."""

from __future__ import annotations

import asyncio

from perftriage.core.model import events as ev
from perftriage.services.hosts.registry import Host
from perftriage.services.sampling.local_sampler import LocalSampler
from perftriage.services.sampling.remote_sampler import RemoteSampler
from perftriage.services.investigation.session import Session
from perftriage.services.sources.base import BaseSource, SourceKind, SourceState
from perftriage.transport.base import MaintainsConnection

# a transport's state word, as the event and as the source state
CONN_STATES: dict[str, ev.HostConnState] = {
    "connecting": "connecting", "up": "up", "retrying": "retrying", "down": "down"}
SOURCE_STATE: dict[str, SourceState] = {"up": "up", "retrying": "retrying", "down": "down"}


class LocalSamplerSource(BaseSource):
    """NVML + psutil on this machine, one HostSample per interval."""

    def __init__(self, host: str, session: Session, interval: float) -> None:
        super().__init__()
        self.name, self.host = f"sampler:{host}", host
        self.session, self.interval = session, interval

    async def run(self) -> None:
        host = self.host or "localhost"
        sampler = await asyncio.to_thread(LocalSampler, host)
        self.session.emit(ev.HostStatus(host=host, state="up"))
        self.set_state("up")
        if info := await asyncio.to_thread(sampler.info):
            self.session.emit(ev.HostInfo(host=host, info=info))
        while True:
            await asyncio.sleep(self.interval)
            self.session.emit(await asyncio.to_thread(sampler.sample))


class RemoteSamplerSource(BaseSource):
    """One streaming nvidia-smi and one /proc loop on the host (no spawn per sample)."""

    def __init__(self, host: Host, session: Session, interval: float) -> None:
        super().__init__()
        self.name, self.host = f"sampler:{host.name}", host.name
        self.sampler = RemoteSampler(host.name, host.transport, session.emit, interval)

    async def run(self) -> None:
        self.set_state("up")
        await self.sampler.run()

    async def refresh_detail(self) -> dict:
        return await self.sampler.refresh_detail()


class ConnectionSource(BaseSource):
    """Keeps a remote host's connection up (reconnecting with backoff) and
    records its state (connecting / up / retrying / down, with the reason)."""

    def __init__(self, host: str, transport: MaintainsConnection, session: Session) -> None:
        super().__init__()
        self.name, self.host = f"connection:{host}", host
        self.transport, self.session = transport, session

    def _on_state(self, state: str, reason: str | None) -> None:
        conn = CONN_STATES.get(state)
        if conn is not None:
            self.session.emit(ev.HostStatus(host=self.host or "?", state=conn, reason=reason))
        self.set_state(SOURCE_STATE.get(state, "starting"), reason)

    async def run(self) -> None:
        self.transport.on_state = self._on_state
        await self.transport.maintain()


def host_sources(host: Host, session: Session, interval: float) -> list[BaseSource]:
    """The sources of one host: its sampler, and its connection when the
    transport keeps one."""
    if host.local:
        return [LocalSamplerSource(host.name, session, interval)]
    sources: list[BaseSource] = [RemoteSamplerSource(host, session, interval)]
    if isinstance(host.transport, MaintainsConnection):
        sources.append(ConnectionSource(host.name, host.transport, session))
    return sources


def sampler_sources(config, registry, session: Session) -> list[BaseSource]:
    """Source factory: :func:`host_sources` of every host in ``registry``."""
    return [source for host in registry.hosts.values()
            for source in host_sources(host, session, config.ui.sample_interval)]


SAMPLERS = SourceKind("samplers", sampler_sources)
