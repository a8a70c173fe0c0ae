"""Which counter source a host gets: NVML GPM here; there one long-lived
command (the host's pynvml, else nvidia-smi dmon)."""

from __future__ import annotations

from perftriage.core.gpus import peak_bandwidth
from perftriage.services.sources.gpm_snapshot import is_local
from perftriage.services.sources.gpm_remote import RemoteGpmSource
from perftriage.services.sources.gpm_local import LocalGpmSource
from perftriage.services.sources.base import BaseSource, SourceKind


def counter_source(host, session, interval: float = 1.0, nvml=None) -> BaseSource:
    """The bandwidth-counter source for ``host``. A remote host's peak comes
    from its NVML (recorded as host info by the sampler), else the table by the
    GPU name its samples carry."""
    if is_local(host):
        return LocalGpmSource(host.name, session.emit, interval, nvml=nvml)

    def peaks(index: int):
        hs = session.state.hosts.get(host.name)
        name = next((g.name for g in (hs.gpus if hs else []) if g.index == index), "")
        nvml_gbs = (hs.info.get("bandwidth_gbs") or {}) if hs else {}
        return name, peak_bandwidth(name, measured_gbs=nvml_gbs.get(str(index)))

    return RemoteGpmSource(host.name, host.transport, session.emit, peaks,
                           python=host.config.python)


def counter_sources(config, registry, session) -> list[BaseSource]:
    """Source factory: the bandwidth counters of every host in ``registry``."""
    return [counter_source(host, session, config.ui.sample_interval)
            for host in registry.hosts.values()]


COUNTERS = SourceKind("counters", counter_sources)
