"""Everything a live session runs, without any UI: the session, the hosts,
the probe runner and the samplers. The Textual app drives one of these;
headless commands use the same pieces.

A running cockpit grows (hosts, logs, engines, Prometheus, hypothesis
packs: the palette and the keys): what joins is recorded as a
``cockpit.added`` / ``cockpit.removed`` event (a followed log is its
``log.opened``) and a continued investigation starts it again (:meth:`Cockpit.resume`).
A source that can join declares how, next to its factory
(:class:`~perftriage.services.sources.base.SourceKind`); the cockpit names
none. Every growing operation raises
:class:`~perftriage.services.sources.base.JoinError` with a one-line reason.

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
from typing import cast
from pathlib import Path

import msgspec

from perftriage.core.model import events as ev
from perftriage.core.sanitize import visible
from perftriage.core.store.config import Config
from perftriage.services.compare.baseline import Baseline
from perftriage.core.store.config_additions import Additions
from perftriage.services.hosts.dig_in import DigInError, fleet_host_config
from perftriage.services.hosts.registry import Host, HostRegistry, build_registry, make_host
from perftriage.services.investigation.hypotheses import add_hypotheses
from perftriage.services.sources.samplers import RemoteSamplerSource, host_sources
from perftriage.services.sources.fleet import FleetSource
from perftriage.services.sampling.remote_sampler import fetch_info, fetch_processes
from perftriage.services.logs.follower import LogFollower
from perftriage.services.profile.captures import ProfileCaptures
from perftriage.services.probes.runner import ProbeRunner
from perftriage.services.logs.server_launcher import ServerLauncher
from perftriage.services.investigation.session import Session
from perftriage.services.sources.base import Joined, Joining, JoinError, Source, SourceSet
from perftriage.services.sources.factories import SOURCE_KINDS, joining
from perftriage.services.triage.auto import AutoSteps
from perftriage.services.triage.live import LiveTriage


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


@dataclass(frozen=True)
class Recorded:
    """Something a continued investigation's recording names and this run's
    config does not: a host, an engine or Prometheus URL, a followed log."""

    what: str
    value: str
    host: str | None = None

    def shown(self) -> str:
        """One visible line (the value comes from a file anyone can write)."""
        where = f"{self.host}:" if self.what == "log" and self.host else ""
        on = f" on {self.host}" if self.what != "log" and self.host else ""
        return visible(f"{self.what} {where}{self.value[:200]}{on}")


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
        # the before of a before/after (b), and the live state against it
        self.baseline: Baseline | None = self._baseline()
        # the diagnosis, phase by phase, from the baseline's live recording (at most 1 Hz)
        self.triage: LiveTriage | None = (LiveTriage(self.session, self.baseline,
                                                     own_hosts=lambda: self.registry.names)
                                          if self.baseline is not None and self.session.mode.live
                                          else None)
        # [triage] auto: the cheap witnesses the findings ask for, without a key (without
        # it: only the cheap witness that tells whether a change removed a cause)
        self.auto_steps: AutoSteps | None = (
            AutoSteps(self, self.triage, every_finding=self.config.triage.auto)
            if self.triage is not None else None)
        self.sample_interval = self.config.ui.sample_interval
        self._tasks: list[asyncio.Task] = []
        self.started = False
        # what the config file says, for offering to save what joined at run
        # time (save_to_config): the Prometheus read at start, and the
        # config as last saved from here
        self.configured_prometheus: str | None = self.config.fleet.prometheus
        self.saved_config: Config | None = None
        # what a continued investigation's recording names and the config does
        # not: listed by resume(), started only by reopen_recorded() (the O key)
        self.recorded_only: list[Recorded] = []

    def _baseline(self) -> Baseline | None:
        """Live: the session's events against the baseline marked. A replay
        (its transcript whole): the same comparison at the replay's position,
        read from the transcript. A watched recording still grows: none (the
        views say what was marked)."""
        mode, path = self.session.mode, self.session.source_path
        if mode.live:
            return Baseline(self.session)
        return Baseline(self.session, transcript=path) if mode.whole and path is not None else None

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
        if self.triage is not None:
            self.spawn(self.triage.run())
        for kind in SOURCE_KINDS:  # services/sources/factories.py
            for source in kind.start(self.config, self.registry, self.session):
                self.add_source(source)
        from perftriage.services.investigation.named import restore_logs  # noqa: PLC0415

        if self.session.pending_logs is not None:
            # a continued investigation's logs: after the first frames (the
            # thread holds the GIL much of the time while it applies them)
            await asyncio.sleep(RESTORE_LOGS_AFTER_S)
            await restore_logs(self.session)
        self.resume()  # a continued investigation: what its earlier runs added and followed
        for host in self.registry.hosts.values():  # host config `logs`: from the start, or on
            for path in host.config.logs:          # after what earlier runs read of them
                self.logs.open_file(host.name, path)

    def add_host(self, host: Host) -> None:
        """A host joins the running cockpit (typed in the palette, picked in
        the Fleet view): sampled, probed and followed like a configured one."""
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

    # --- growing: what joins a running cockpit ----------------------------------------

    def _growable(self) -> None:
        if self.replay:
            raise JoinError("a replay is read-only: nothing joins it")

    def add_hosts(self, spec: str, *, record: bool = True) -> list[str]:
        """Add the host(s) ``spec`` names (``user@host[:port]``, an ssh alias, a
        config name or a node set); returns the names added (none: all there)."""
        from perftriage.services.hosts.registry import HostSpecError, resolve_hosts  # noqa: PLC0415

        self._growable()
        spec = spec.strip()
        if not spec:
            raise JoinError("a host: user@host, an ssh alias or a config name")
        try:
            # reached like the hosts given at start (--ssh-config, --accept-new-host-keys)
            found = resolve_hosts(self.config, [spec], ssh=self.registry.ssh,
                                  with_localhost=False)
        except (HostSpecError, ValueError) as exc:
            raise JoinError(str(exc)) from None
        added = [h.name for h in found.hosts.values() if h.name not in self.registry.hosts]
        for name in added:
            self.add_host(found.hosts[name])
        if record and added:
            self.session.emit(ev.CockpitAdded(what="host", value=spec))
        return added

    def dig_in(self, name: str) -> bool:
        """Add fleet host ``name`` (picked in the Fleet view) as an SSH host;
        False when it is there already. Raises DigInError with a one-line reason."""
        if name in self.registry.hosts:
            return False
        hc = fleet_host_config(self.config, name)
        try:
            host = make_host(hc, self.registry.ssh)
        except ValueError as exc:
            raise DigInError(f"{name}: {exc}") from None
        self.add_host(host)
        return True

    async def remove_host(self, name: str) -> None:
        """Stop sampling, following and probing ``name``; its transport is closed."""
        self._growable()
        if name not in self.registry.hosts:
            raise JoinError(f"no host {name!r} in this cockpit")
        for sid, src in list(self.logs.sources.items()):
            if src.host == name:
                await self.logs.close(sid, "host removed")
        for source in list(self.sources):
            if source.host == name:
                await self.sources.remove(source.name)
        host = self.registry.remove(name)
        if host is not None:
            await host.transport.close()
        self.session.emit(ev.CockpitRemoved(what="host", value=name))

    def follow_log(self, host: str, path: str) -> str:
        """Follow ``path`` on ``host``; returns the log source id."""
        self._growable()
        if not path.strip():
            raise JoinError("a log: the path of the file to follow")
        if host not in self.registry.hosts:
            raise JoinError(f"no host {host!r} in this cockpit; "
                            f"known: {', '.join(self.registry.names)}")
        return self.logs.open_file(host, path.strip())

    def join(self, what: ev.Growable, value: str, host: str | None = None, *,
             record: bool = True) -> Joined:
        """A source of the kind that joins as ``what`` (``engine``, ``prometheus``:
        :func:`~perftriage.services.sources.factories.joining`), made from
        ``value`` on ``host``: the source and the value as recorded (normalised)."""
        self._growable()
        kind = joining(what)
        if kind is None or kind.join is None:
            raise JoinError(f"nothing joins as {what!r}")
        joined = kind.join(Joining(self.config, self.registry, self.session, value, host,
                                   taken=lambda name: self.sources.get(name) is not None))
        if joined.config is not None:
            self.config = joined.config
        if self.started and joined.source is not None:
            if kind.replaces and self.sources.get(joined.source.name) is not None:
                self.spawn(self._replace(joined.source))
            else:
                self.add_source(joined.source)
        if record:
            self.session.emit(ev.CockpitAdded(what=what, value=joined.value, host=host))
        return joined

    async def _replace(self, source: Source) -> None:
        await self.sources.remove(source.name)
        self.add_source(source)

    def add_engine(self, url: str, host: str = "localhost", *, record: bool = True) -> str:
        """Scrape an SGLang/vLLM ``/metrics`` URL as seen from ``host``; returns
        the source's name (``engine:HOST``)."""
        source = self.join("engine", url, host, record=record).source
        return source.name if source is not None else ""

    def set_prometheus(self, url: str, *, record: bool = True) -> str:
        """Read the fleet from ``url`` (replaces the Prometheus read until now);
        returns the URL as normalised."""
        return self.join("prometheus", url, record=record).value

    def load_pack(self, spec: str, *, record: bool = True) -> int:
        """Load the hypothesis pack ``spec`` (a file or a bundled name); returns
        the hypotheses added."""
        from perftriage.core.checks import pack  # noqa: PLC0415
        from perftriage.core.store.config import ConfigError  # noqa: PLC0415

        self._growable()
        try:
            hypotheses = pack.load(spec.strip())
        except ConfigError as exc:  # file:line and the check's error position
            raise JoinError(str(exc)) from None
        except (OSError, ValueError) as exc:
            raise JoinError(f"pack {spec!r}: {exc}") from None
        added = add_hypotheses(self.session, hypotheses)
        if record:
            self.session.emit(ev.CockpitAdded(what="pack", value=spec.strip()))
        return added

    def resume(self) -> list[str]:
        """A continued investigation: what its earlier runs added and the logs
        they followed. A recording is hostile input (it is shared, and may
        be crafted), so nothing it names starts without a key: what the
        user's own config or command line names starts anyway (the hosts, the
        configured logs and engines, with the cockpit); everything else is
        kept in ``recorded_only``, said in one note, and started by
        :meth:`reopen_recorded` (the ``O`` key). Returns the lines said."""
        state = self.session.state
        configured_urls = self._configured_engines()
        listed: list[Recorded] = []
        for added in list(state.additions):
            if added.what == "host":
                if added.value in self.registry.hosts or any(
                        h.config.ssh == added.value for h in self.registry.hosts.values()):
                    continue  # the config or -H names it
                listed.append(Recorded("host", added.value))
            elif added.what == "prometheus":
                if self.config.fleet.prometheus != added.value:
                    listed.append(Recorded("prometheus", added.value))
            elif joining(added.what) is not None:
                if (added.host, added.value) not in configured_urls:
                    listed.append(Recorded(added.what, added.value, added.host))
        for log in list(state.logs.values()):
            was_followed = log.open or log.closed_reason == "quit"
            if log.kind != "file" or not was_followed:
                continue
            host = self.registry.hosts.get(log.host)
            if host is not None and log.path in host.config.logs:
                continue  # the config names it: followed with the cockpit (start)
            item = Recorded("log", log.path, log.host)
            if item not in listed:
                listed.append(item)
        self.recorded_only = listed
        if not listed:
            return []
        said = (f"not re-opened, named only by the recording ({len(listed)}; O re-opens "
                f"what passes the rules): " + "; ".join(r.shown() for r in listed[:8])
                + (f"; and {len(listed) - 8} more" if len(listed) > 8 else ""))
        self.session.emit(ev.NoteAdded(text=said))
        return [said]

    def _configured_engines(self) -> set[tuple[str | None, str]]:
        """(host, URL) of every engine /metrics the config names."""
        urls: set[tuple[str | None, str]] = set()
        for host in self.registry.hosts.values():
            if url := getattr(host.config, "metrics_url", None):
                urls.add((host.name, url))
        urls.update((p.host, p.metrics_url) for p in self.config.servers if p.metrics_url)
        return urls

    async def reopen_recorded(self) -> list[str]:
        """Start what :meth:`resume` listed (asked for: the ``O`` key): hosts
        first, then engines and Prometheus, then each log that passes the
        rules for a file named by a recording
        (:meth:`LogFollower.follow_refusal`). One line per item, also noted."""
        self._growable()
        pending, self.recorded_only = self.recorded_only, []
        order = {"host": 0, "log": 2}
        said: list[str] = []
        for item in sorted(pending, key=lambda r: order.get(r.what, 1)):
            try:
                if item.what == "host":
                    self.add_hosts(item.value, record=False)
                elif item.what == "log":
                    host = item.host or "localhost"
                    why = await self.logs.follow_refusal(host, item.value)
                    if why is not None:
                        said.append(f"not followed: {item.shown()}: {why}")
                        continue
                    self.follow_log(host, item.value)
                else:
                    self.join(cast(ev.Growable, item.what), item.value, item.host, record=False)
            except JoinError as exc:
                said.append(f"not started: {item.shown()}: {exc}")
                continue
            said.append(f"re-opened: {item.shown()}")
        for line in said:
            self.session.emit(ev.NoteAdded(text=line))
        return said

    # --- saving what joined into the config file ---------------------------------------

    def unsaved(self) -> Additions:
        """What joined this investigation and is not in the config yet."""
        config, state = self.saved_config or self.config, self.session.state
        out = Additions()
        configured = {h.name for h in config.hosts}
        for added in state.additions:
            if added.what == "host":
                for name, host in self.registry.hosts.items():
                    if name not in configured and (name == added.value
                                                   or host.config.ssh == added.value):
                        out.hosts[name] = host.config.ssh
            elif added.what == "engine" and added.host:
                hc = config.host(added.host)
                if hc is None or hc.metrics_url != added.value:
                    out.metrics_urls[added.host] = added.value
            elif added.what == "prometheus" and added.value != self.configured_prometheus:
                out.prometheus = added.value
        for log in state.logs.values():
            hc = config.host(log.host)
            if log.kind == "file" and log.open and (hc is None or log.path not in hc.logs):
                out.logs.setdefault(log.host, []).append(log.path)
        return out

    def save_to_config(self, path: Path) -> list[str]:
        """Write :meth:`unsaved` into the config file ``path``; the changes made."""
        from perftriage.core.store.config import ConfigError, load  # noqa: PLC0415
        from perftriage.core.store.config_additions import save  # noqa: PLC0415

        additions = self.unsaved()
        if not additions:
            return []
        try:
            changes = save(path, additions)
        except (ConfigError, OSError) as exc:
            raise JoinError(f"config not saved: {exc}") from None
        self.saved_config = load(path)  # now configured: not offered again
        self.configured_prometheus = self.saved_config.fleet.prometheus
        return changes

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
