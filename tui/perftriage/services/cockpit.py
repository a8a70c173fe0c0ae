"""Everything a live session runs, without any UI: the session, the hosts,
the probe runner and the samplers. The Textual app drives one of these;
headless commands use the same pieces.

A session that is not live (a replay, a watch: ``session.mode``) gets only
what it uses: the session, the config, an empty host registry and source
set. Its cockpit builds no probe runner, log follower, server launcher or
profile captures; asking for one is a :class:`NotLive` error (the UI
refuses every key that would, before it asks).
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path

import msgspec

from perftriage.core.model import events as ev
from perftriage.core.store.config import Config
from perftriage.services.hosts.registry import HostRegistry, build_registry
from perftriage.services.sources.samplers import RemoteSamplerSource, host_sources
from perftriage.services.sources.fleet import FleetSource
from perftriage.services.sampling.remote_sampler import fetch_info, fetch_processes
from perftriage.services.logs.follower import LogFollower
from perftriage.services.profile.captures import ProfileCaptures
from perftriage.services.probes.runner import ProbeRunner
from perftriage.services.logs.server_launcher import ServerLauncher
from perftriage.services.investigation.session import Session
from perftriage.services.sources.base import Source, SourceSet
from perftriage.services.sources.factories import SOURCE_FACTORIES


RESTORE_LOGS_AFTER_S = 1.0


class NotLive(RuntimeError):
    """A part that touches hosts was asked of a session that is not live."""


@dataclass
class LiveParts:
    """What only a live session runs."""

    probes: ProbeRunner
    logs: LogFollower
    servers: ServerLauncher
    profiles: ProfileCaptures


class Cockpit:
    def __init__(
        self,
        config: Config | None = None,
        sessions_dir: Path | None = None,
        *,
        registry: HostRegistry | None = None,
        session: Session | None = None,
        name: str = "session",
        sample_interval: float | None = None,
    ) -> None:
        self.config = config or Config()
        if sample_interval:  # --sample-interval: what every source factory reads
            self.config = msgspec.structs.replace(self.config, ui=msgspec.structs.replace(
                self.config.ui, sample_interval=sample_interval))
        self.registry = registry or build_registry(self.config)
        self.session = session or Session(
            name=name,
            hosts=self.registry.names,
            sessions_dir=sessions_dir,
            log_ring=self.config.ui.log_ring_lines,
            redact=self.config.security.redact,
        )
        self.sources = SourceSet()  # every Source this cockpit runs (services/sources/base.py)
        self._live = self._live_parts() if self.session.mode.live else None
        self.sample_interval = self.config.ui.sample_interval
        self._tasks: list[asyncio.Task] = []
        self.started = False
        # what the config file says, for offering to save what joined at run
        # time (services/grow.py): the Prometheus read at start, and the
        # config as last saved from here
        self.configured_prometheus: str | None = self.config.fleet.prometheus
        self.saved_config: Config | None = None

    def _live_parts(self) -> LiveParts:
        logs = LogFollower(self.session, self.registry,  # its log sources are in .sources
                           transcript_cap=self.config.ui.transcript_log_cap,
                           running=self.sources)
        return LiveParts(
            probes=ProbeRunner(self.session, self.registry, templates=self.config.probes),
            logs=logs,
            servers=ServerLauncher(self.session, logs, self.config.servers),
            profiles=ProfileCaptures(self.session, self.registry, self.config),
        )

    def _parts(self) -> LiveParts:
        if self._live is None:
            raise NotLive(f"{self.session.mode.label}: no probes, logs, servers or captures")
        return self._live

    @property
    def probes(self) -> ProbeRunner:
        return self._parts().probes

    @property
    def logs(self) -> LogFollower:
        return self._parts().logs

    @property
    def servers(self) -> ServerLauncher:
        return self._parts().servers

    @property
    def profiles(self) -> ProfileCaptures:
        return self._parts().profiles

    @property
    def replay(self) -> bool:
        return self.session.replay

    async def start(self) -> None:
        if self.started or self.replay:
            return
        self.started = True
        for factory in SOURCE_FACTORIES:  # services/sources/factories.py
            for source in factory(self.config, self.registry, self.session):
                self.add_source(source)
        from perftriage.services.investigation.named import restore_logs  # noqa: PLC0415

        if self.session.pending_logs is not None:
            # a continued investigation's logs: after the first frames (the
            # thread holds the GIL much of the time while it applies them)
            await asyncio.sleep(RESTORE_LOGS_AFTER_S)
            await restore_logs(self.session)
        for host in self.registry.hosts.values():  # host config `logs`: followed from the start
            for path in host.config.logs:
                self.logs.open_file(host.name, path)
        from perftriage.services.grow import resume  # noqa: PLC0415

        resume(self)  # a continued investigation: what its earlier runs added and followed

    def add_host(self, host) -> None:
        """A host joins the running cockpit (picked in the Fleet view, see
        services/hosts/dig_in.py): sampled, probed and followed like a configured one."""
        self.registry.add(host)
        self.session.emit(ev.HostStatus(host=host.name, state="connecting"))
        if not self.started or self.replay:
            return
        for source in host_sources(host, self.session, self.sample_interval):
            self.add_source(source)

    def add_source(self, source: Source) -> Source:
        """Start ``source``; it stops with the cockpit."""
        return self.sources.add(source)

    def spawn(self, coro) -> asyncio.Task:
        """Run a background task that stops with the cockpit."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.append(task)
        return task

    @property
    def fleet(self) -> FleetSource | None:
        """The Fleet view's source ([fleet] prometheus / --prometheus), if any."""
        return next((s for s in self.sources if isinstance(s, FleetSource)), None)

    @property
    def remote_samplers(self) -> dict:
        """The remote samplers by host (the detail view asks them for processes)."""
        return {src.host: src.sampler for src in self.sources
                if isinstance(src, RemoteSamplerSource) and src.host is not None}

    async def host_detail(self, name: str) -> dict:
        """Processes per GPU and the topology of ``name`` (emitted as HostInfo)."""
        if (sampler := self.remote_samplers.get(name)) is not None:
            return await sampler.refresh_detail()
        hs = self.session.state.hosts.get(name)
        transport = self.registry.get(name).transport
        info: dict = {}
        if hs is not None and "topo" not in hs.info and "topo_error" not in hs.info:
            info = await fetch_info(transport)
        if hs is not None and hs.gpus and not any(g.processes for g in hs.gpus):
            # NVML listed no compute process (seen on a VM): ask nvidia-smi
            info["processes"] = await fetch_processes(transport, hs.gpus)
        if info:
            self.session.emit(ev.HostInfo(host=name, info=info))
        return info

    async def stop(self, reason: str = "quit") -> None:
        live = self._live
        try:  # servers and log followers die (no orphan on any host) before the transcript ends
            if live is not None:
                await live.servers.stop_all()
        finally:
            if live is not None:
                await live.logs.close_all(reason)
            await self.sources.stop_all()
        for task in self._tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._tasks, return_exceptions=True)
            if live is not None:
                await live.probes.close()
        self._tasks.clear()
        with contextlib.suppress(Exception):
            await self.registry.close()
        self.session.close(reason)
