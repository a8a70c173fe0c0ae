"""The fleet through Prometheus: the fleet Source.

SSH is for digging into the host the fleet view points at; the fleet-wide
view asks Prometheus, through :mod:`perftriage.transport.prometheus` (its
HTTP API client). :class:`FleetSource` reads the fleet every ``interval`` seconds,
keeps the latest snapshot and summary for the Fleet view, and emits a
:class:`~perftriage.core.model.events.FleetUpdated` (counts, medians, the
top outliers) into the session.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import msgspec

from perftriage.core.fleet.model import FleetSnapshot, FleetSummary
from perftriage.core.analysis.outliers import DEFAULT_THRESHOLD
from perftriage.core.model import events as ev
from perftriage.services.sources.base import BaseSource, Joined, JoinError, Joining, SourceKind
from perftriage.transport.prometheus import PrometheusClient, PrometheusError, normalize_url

DEFAULT_INTERVAL_S = 5.0
EVENT_OUTLIERS = 50  # outliers recorded per FleetUpdated (the transcript stays small)
RECORD_EVERY_S = 60.0  # a FleetUpdated at least this often while nothing changes


class FleetSource(BaseSource):
    """Reads the fleet from Prometheus every ``interval`` seconds."""

    def __init__(self, session, url: str, *, interval: float = DEFAULT_INTERVAL_S,
                 threshold: float = DEFAULT_THRESHOLD,
                 on_update: Callable[[FleetSnapshot, FleetSummary], None] | None = None) -> None:
        super().__init__()
        self.name, self.host = "fleet", None
        self.session = session
        self.client = PrometheusClient(url)
        self.interval = interval
        self.threshold = threshold
        self.on_update = on_update
        self.snapshot: FleetSnapshot | None = None
        self.summary: FleetSummary | None = None
        self.refresh_s: float | None = None  # how long the last read + summary took
        self._said: tuple | None = None  # what the last FleetUpdated said
        self._said_at = 0.0

    async def history(self, metric: str, host: str, gpu: int | None, *, seconds: float,
                      step: float) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
        """One host's (or GPU's) series of ``metric`` and its fleet median
        (:meth:`PrometheusClient.history`)."""
        return await self.client.history(metric, host, gpu, seconds=seconds, step=step)

    async def refresh(self) -> FleetSummary:
        t0 = time.perf_counter()
        summary = self.accept(await self.client.read_fleet())
        self.refresh_s = time.perf_counter() - t0
        return summary

    def accept(self, snapshot: FleetSnapshot) -> FleetSummary:
        """Take one read of the fleet: summarise it, keep it, and record it when
        what it says changed (counts, which values are outliers) or a minute
        passed: the transcript gets the story, not a copy every 5 s."""
        summary = snapshot.summarize(self.threshold)
        self.snapshot, self.summary = snapshot, summary
        said = (summary.hosts, summary.gpus,
                tuple((o.host, o.gpu, o.metric) for o in summary.outliers[:EVENT_OUTLIERS]))
        now = time.monotonic()
        if said != self._said or now - self._said_at >= RECORD_EVERY_S:
            self._said, self._said_at = said, now
            self.session.emit(fleet_event(self.client.url, summary))
        if self.on_update is not None:
            self.on_update(snapshot, summary)
        return summary

    async def run(self) -> None:
        delay = self.interval
        try:
            while True:
                try:
                    await self.refresh()
                    self.set_state("up")
                    delay = self.interval
                except PrometheusError as exc:
                    self.set_state("retrying", exc.reason)
                    delay = min(delay * 2, 60.0)  # back off while Prometheus is away
                await asyncio.sleep(delay)
        finally:
            await self.client.close()


def fleet_event(url: str, summary: FleetSummary) -> ev.FleetUpdated:
    return ev.FleetUpdated(
        source=url, hosts=summary.hosts, gpus=summary.gpus, medians=summary.medians,
        outliers=[ev.FleetOutlier(host=o.host, gpu=o.gpu, metric=o.metric, value=o.value,
                                  fleet_median=o.fleet_median, distance=round(o.distance, 3))
                  for o in summary.outliers[:EVENT_OUTLIERS]],
        outlier_count=len(summary.outliers))


def configured_fleet(config, session) -> FleetSource | None:
    """The fleet source ``[fleet] prometheus`` (or ``--prometheus``) asks for."""
    if not config.fleet.prometheus:
        return None
    return FleetSource(session, config.fleet.prometheus, interval=config.fleet.interval,
                       threshold=config.fleet.threshold)


def fleet_sources(config, registry, session) -> list[FleetSource]:
    """Source factory: the fleet source, when one is configured."""
    fleet = configured_fleet(config, session)
    return [fleet] if fleet is not None else []


def join_fleet(j: Joining) -> Joined:
    """A Prometheus URL typed in the palette: the fleet is read from it from
    now on (it replaces the Prometheus read until now; the cockpit's config
    says so: ``[fleet] prometheus``)."""
    try:
        url = normalize_url(j.value.strip())
    except ValueError as exc:
        raise JoinError(f"a Prometheus URL: {exc}") from None
    config = msgspec.structs.replace(
        j.config, fleet=msgspec.structs.replace(j.config.fleet, prometheus=url))
    return Joined(configured_fleet(config, j.session), url, config)


FLEET = SourceKind("fleet", fleet_sources, joins="prometheus", join=join_fleet, replaces=True)
