"""The engine's own figures: its Prometheus ``/metrics``, scraped once a second.

A :class:`~perftriage.services.sources.base.Source`. The page is fetched *through the
host's transport* (a direct-tcpip channel of the host's SSH connection, a
plain socket for localhost; see :mod:`perftriage.transport.http_get`), parsed
with prometheus_client's parser (:mod:`perftriage.core.parse.engine_metrics`)
and emitted as one ``engine.sample`` event per scrape, at most once a second.
The reducer derives rates and quantiles from consecutive samples.

State follows the other sources: ``starting`` -> ``up``; a failed scrape
(host unreachable, endpoint refusing - e.g. the server is still loading -,
HTTP error, not a metrics page) -> ``retrying`` with the reason, retried with
the SSH transport's capped exponential backoff (0.5 s doubling to 10 s); an
endpoint that can never work (a bad URL) -> ``down``. Each change is an
``engine.status`` event so the panes and a replay can say why.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

from perftriage.core.model import events as ev
from perftriage.core.parse.engine_metrics import MetricsFormatError, parse_exposition
from perftriage.core.sanitize import visible
from perftriage.services.sources.base import BaseSource, Joined, JoinError, Joining, SourceKind
from perftriage.transport.base import TransportError
from perftriage.transport.http_get import BadUrl, HttpGetter

MIN_INTERVAL_S = 1.0  # recorded at most once a second
BACKOFF_FIRST_S = 0.5
BACKOFF_CAP_S = 10.0


class ScrapeError(Exception):
    """One failed scrape, with a one-line reason safe to show; ``unreachable``
    when no HTTP answer came (host or endpoint down), else the answer was wrong."""

    def __init__(self, reason: str, *, unreachable: bool) -> None:
        super().__init__(reason)
        self.unreachable = unreachable


async def scrape(getter: HttpGetter):
    """One page -> :class:`EngineSnapshot`; :class:`ScrapeError` on any failure."""
    try:
        response = await getter.get()
    except TransportError as exc:
        raise ScrapeError(visible(exc.reason), unreachable=True) from None
    if response.status != 200:
        raise ScrapeError(f"{getter.target.url}: HTTP {response.status} "
                          f"{visible(response.reason)[:80]}".rstrip(), unreachable=False)
    text = response.body.decode("utf-8", "replace")
    try:  # a big page takes tens of ms to parse: not on the event loop
        return await asyncio.to_thread(parse_exposition, text)
    except MetricsFormatError as exc:
        raise ScrapeError(f"{getter.target.url}: {visible(str(exc))}",
                          unreachable=False) from None


class EngineMetricsSource(BaseSource):
    """Scrapes ``url`` as seen from ``host`` and emits ``engine.sample`` events."""

    def __init__(self, emit, host: str, transport, url: str, *, name: str | None = None,
                 interval: float = 1.0, timeout: float = 5.0) -> None:
        super().__init__()
        self.emit = emit  # Session.emit (or any callable taking an event)
        self.host: str = host
        self.url = url
        self.name = name or f"engine:{host}"
        self.interval = max(MIN_INTERVAL_S, interval)
        self.timeout = timeout
        self.transport = transport
        self.getter: HttpGetter | None = None
        self.scrapes = 0

    def _status(self, state, reason: str | None = None) -> None:
        conn_state = {"starting": "connecting"}.get(state, state)
        if (state, reason) != (self.state, self.reason):
            self.emit(ev.EngineStatus(source=self.name, host=self.host, url=self.url,
                                      state=conn_state, reason=reason))
        self.set_state(state, reason)

    async def run(self) -> None:
        try:
            self.getter = HttpGetter(self.transport, self.url, timeout=self.timeout)
        except BadUrl as exc:
            self._status("down", str(exc))
            return
        self.emit(ev.EngineStatus(source=self.name, host=self.host, url=self.url,
                                  state="connecting"))
        backoff = 0.0
        try:
            while True:
                started = time.monotonic()
                try:
                    snapshot = await scrape(self.getter)
                except ScrapeError as exc:
                    backoff = min(BACKOFF_CAP_S, backoff * 2) if backoff else BACKOFF_FIRST_S
                    self._status("retrying", f"{exc} (retry in {backoff:g}s)")
                    await asyncio.sleep(backoff)
                    continue
                backoff = 0.0
                self.scrapes += 1
                if self.state != "up":
                    self.set_state("up")  # the sample itself tells the reducer it is up
                self.emit(ev.EngineSample(source=self.name, host=self.host, snapshot=snapshot))
                await asyncio.sleep(max(0.0, self.interval - (time.monotonic() - started)))
        finally:
            if self.getter is not None:
                await self.getter.close()


def configured_sources(config, registry, emit) -> list[EngineMetricsSource]:
    """One source per ``metrics_url`` of a ``[[hosts]]`` entry (``engine:HOST``)
    or a ``[[servers]]`` profile (``engine:PROFILE``), for hosts in ``registry``."""
    sources = []
    for name in registry.names:
        hc = registry.get(name).config
        if getattr(hc, "metrics_url", None):
            sources.append(EngineMetricsSource(emit, name, registry.get(name).transport,
                                               hc.metrics_url))
    for profile in config.servers:
        if profile.metrics_url and profile.host in registry.names:
            sources.append(EngineMetricsSource(emit, profile.host,
                                               registry.get(profile.host).transport,
                                               profile.metrics_url,
                                               name=f"engine:{profile.name}"))
    return sources


def engine_sources(config, registry, session) -> list[EngineMetricsSource]:
    """Source factory: :func:`configured_sources` emitting into ``session``."""
    return configured_sources(config, registry, session.emit)


def join_engine(j: Joining) -> Joined:
    """An engine's ``/metrics`` URL typed in the palette, scraped as seen from
    ``j.host`` (default localhost): ``engine:HOST``, or ``engine:HOST-2``... when
    that name is taken."""
    url, host = j.value.strip(), j.host or "localhost"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise JoinError("an engine URL: an http(s) URL with a host, "
                        "e.g. http://127.0.0.1:30000/metrics")
    if host not in j.registry.hosts:
        raise JoinError(f"no host {host!r} in this cockpit; known: {', '.join(j.registry.names)}")
    name, n = f"engine:{host}", 1
    while j.taken(name):
        n += 1
        name = f"engine:{host}-{n}"
    source = EngineMetricsSource(j.session.emit, host, j.registry.get(host).transport, url,
                                 name=name)
    return Joined(source, url)


ENGINE = SourceKind("engine", engine_sources, joins="engine", join=join_engine)
