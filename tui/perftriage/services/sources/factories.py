"""Every kind of source a cockpit starts, in one place.

A source factory has one shape, ``(config, registry, session) ->
Iterable[Source]``: it reads what it needs from the config (the sampling
period is ``config.ui.sample_interval``), the hosts from the registry, and
emits into the session. :data:`SOURCE_FACTORIES` lists them in the order the
cockpit starts them; a new kind of source is one module with its factory and
one line here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from perftriage.core.store.config import Config
from perftriage.services.sources.checks import check_sources
from perftriage.services.sources.engine_metrics import engine_sources
from perftriage.services.sources.gap_monitor import gap_sources
from perftriage.services.sources.counters import counter_sources
from perftriage.services.sources.samplers import sampler_sources
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.sources.fleet import fleet_sources
from perftriage.services.investigation.session import Session
from perftriage.services.sources.base import Source

SourceFactory = Callable[[Config, HostRegistry, Session], Iterable[Source]]

SOURCE_FACTORIES: tuple[SourceFactory, ...] = (
    sampler_sources,  # per host: its sampler, and its SSH connection (Hosts pane)
    counter_sources,  # per host: GPU bandwidth counters (NVML GPM / nvidia-smi dmon)
    gap_sources,  # the live gap recorder over those counters
    check_sources,  # hypotheses' checks against the signals, once a second
    engine_sources,  # engine /metrics of hosts and server profiles (metrics_url)
    fleet_sources,  # the Fleet view's Prometheus reads ([fleet] prometheus)
)
