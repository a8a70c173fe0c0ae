"""The Prometheus HTTP API client (``/api/v1/query``, ``/api/v1/query_range``).

Prometheus already scrapes dcgm-exporter and the engines on every host, so
the fleet-wide view asks it (seven instant queries per refresh, whatever the
fleet's size) instead of opening an SSH session per host.

Every failure is a :class:`PrometheusError` with a one-line reason and a
``kind``: ``unreachable`` (no connection, DNS, timeout), ``http`` (an answer
that is not 200) or ``api`` (a 200 that is not data). Every request is held
to the project's HTTP read policy (:mod:`perftriage.core.http_limits`: a size
cap and an overall deadline). The fleet Source that reads it every few
seconds is :mod:`perftriage.services.sources.fleet`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Literal

import httpx

from perftriage.core.fleet import promql
from perftriage.core.fleet.model import FleetSnapshot
from perftriage.core.http_limits import PROMETHEUS, HttpLimitError, HttpLimits, read_capped, \
    within_deadline
from perftriage.core.sanitize import visible

DEFAULT_TIMEOUT_S = 10.0


class PrometheusError(Exception):
    def __init__(self, kind: Literal["unreachable", "http", "api"], reason: str) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def normalize_url(url: str) -> str:
    """``host:9090`` -> ``http://host:9090``; a trailing slash dropped."""
    url = url.strip()
    if "://" not in url:
        url = "http://" + url
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"not an http(s) URL: {url!r}")
    return url.rstrip("/")


class PrometheusClient:
    """``timeout`` is the overall deadline of one request (connect, headers
    and the whole body); ``limits`` replaces both the deadline and the size cap."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT_S,
                 limits: HttpLimits | None = None) -> None:
        self.url = normalize_url(url)
        self.limits = limits or HttpLimits(PROMETHEUS.max_bytes, timeout)
        self._http = httpx.AsyncClient(base_url=self.url, timeout=self.limits.deadline_s)

    async def __aenter__(self) -> "PrometheusClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    async def _get(self, path: str, params: dict[str, str], decode=promql.decode):
        url = self.url + path
        try:
            async with within_deadline(url, self.limits):
                async with self._http.stream("GET", path, params=params) as resp:
                    content = await read_capped(resp.aiter_bytes(), url, self.limits)
        except HttpLimitError as exc:
            kind: Literal["unreachable", "http"] = "http" if exc.which == "size" else "unreachable"
            raise PrometheusError(kind, visible(exc.reason)) from None
        except httpx.TransportError as exc:
            reason = visible(str(exc) or type(exc).__name__)
            raise PrometheusError("unreachable", f"{self.url}: {reason}") from None
        if resp.status_code != 200 and not content.startswith(b"{"):
            raise PrometheusError("http", f"{self.url}{path}: HTTP {resp.status_code}")
        try:
            return decode(content)
        except promql.ApiError as exc:
            raise PrometheusError("api", f"{self.url}{path}: {exc}") from None

    async def query(self, expr: str, at: float | None = None, decode=promql.decode):
        """``/api/v1/query``: the series of an instant vector (``decode``:
        how its answer is read, :func:`promql.decode_gpu` for a GPU vector)."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return await self._get("/api/v1/query", params, decode)

    async def query_range(self, expr: str, start: float, end: float, step: float):
        """``/api/v1/query_range``: each series as its values over [start, end]."""
        return await self._get("/api/v1/query_range", {
            "query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"})

    async def read_fleet(self) -> FleetSnapshot:
        """Every GPU's dcgm-exporter fields and every engine's gauges, now."""
        taken = time.time()
        metrics = list(promql.GPU_METRICS)
        *gpu, engine = await asyncio.gather(
            *(self.query(promql.gpu_query(m), decode=promql.decode_gpu) for m in metrics),
            self.query(promql.ENGINE_QUERY))
        samples = [s for m, series in zip(metrics, gpu) for s in promql.gpu_samples(series, m)]
        return FleetSnapshot(samples + promql.engine_samples(engine), taken)

    async def history(self, metric: str, host: str, gpu: int | None, seconds: float = 600.0,
                      step: float = 15.0) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
        """One host's (or GPU's) series of ``metric`` and the fleet median of it,
        over the last ``seconds``."""
        end = time.time()
        match = f'Hostname="{_label(host)}"' if metric in promql.GPU_METRICS else \
            f'instance=~"{_regex(host)}(:[0-9]+)?"'
        if gpu is not None:
            match += f',gpu="{gpu}"'
        one, fleet = await asyncio.gather(
            self.query_range(f"avg({metric}{{{match}}})", end - seconds, end, step),
            self.query_range(f"quantile(0.5, {metric})", end - seconds, end, step))
        first = promql.range_points(one)
        median = promql.range_points(fleet)
        return (first[0] if first else []), (median[0] if median else [])


def _label(value: str) -> str:
    """A PromQL string literal's contents."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def _regex(value: str) -> str:
    """``value`` matched literally inside a PromQL (RE2) regex literal."""
    special = set(r".^$*+?()[]{}|\\")
    return _label("".join("\\" + c if c in special else c for c in value))
