"""The Prometheus HTTP API's JSON (``/api/v1/query``, ``/api/v1/query_range``)
read into fleet samples, and the PromQL the fleet view asks.

Which host a series belongs to: dcgm-exporter's ``Hostname`` label, else a
``hostname`` label, else the host part of ``instance`` (``node117:30000`` ->
``node117``). Label text is remote text: controls are made visible
(:func:`perftriage.core.sanitize.visible`) before it is used as a name.
"""

from __future__ import annotations

import math
from collections import defaultdict
from functools import lru_cache
from typing import Literal

import msgspec

from perftriage.core.json_errors import decode_error_text
from perftriage.core.fleet.model import ENGINE_PREFIXES, GPU_METRICS, FleetSample
from perftriage.core.sanitize import visible

# dcgm-exporter's GPU series, every one of them in one selector
GPU_QUERY = '{__name__=~"%s"}' % "|".join(GPU_METRICS)


def gpu_query(metric: str) -> str:
    """One GPU metric with only the labels the fleet view needs: a third of
    the JSON of the raw series (UUID, device, modelName, job ... dropped),
    which is most of a 4096-GPU read's time."""
    return f"max by (Hostname, instance, gpu) ({metric})"


# the engines' gauges; counters, histograms and summaries say nothing per instant
ENGINE_QUERY = ('{__name__=~"(sglang|vllm):.+",'
                '__name__!~".+_(bucket|sum|count|created|total)"}')


class ApiError(ValueError):
    """Prometheus answered, but not with data (bad query, or not its API)."""


class _Series(msgspec.Struct):
    metric: dict[str, str]
    value: tuple[float, str] | None = None
    values: list[tuple[float, str]] | None = None


class _Data(msgspec.Struct):
    resultType: str
    result: msgspec.Raw


class _Response(msgspec.Struct):
    status: Literal["success", "error"]
    data: _Data | None = None
    errorType: str | None = None
    error: str | None = None


class _GpuLabels(msgspec.Struct):
    """The labels a GPU sample is placed by (the others are skipped unread)."""

    name: str = msgspec.field(default="", name="__name__")
    Hostname: str = ""
    hostname: str = ""
    instance: str = ""
    gpu: str = ""


class _GpuSeries(msgspec.Struct):
    metric: _GpuLabels
    value: tuple[float, str] | None = None


_decoder = msgspec.json.Decoder(_Response)
_series_decoder = msgspec.json.Decoder(list[_Series])
_gpu_decoder = msgspec.json.Decoder(list[_GpuSeries])


def decode(body: bytes, series: msgspec.json.Decoder = _series_decoder) -> list:
    """The ``result`` of a vector or matrix answer; ApiError for anything else."""
    try:
        resp = _decoder.decode(body)
    except msgspec.DecodeError as exc:
        raise ApiError(f"not a Prometheus API answer ({decode_error_text(exc)})") from None
    if resp.status != "success" or resp.data is None:
        raise ApiError(visible(f"{resp.errorType or 'error'}: {resp.error or 'no data'}"))
    if resp.data.resultType not in ("vector", "matrix"):
        raise ApiError(f"expected a vector or matrix, got {visible(resp.data.resultType)}")
    try:
        return series.decode(resp.data.result)
    except msgspec.DecodeError as exc:
        raise ApiError(f"malformed {resp.data.resultType} ({decode_error_text(exc)})") from None


def decode_gpu(body: bytes) -> list[_GpuSeries]:
    """An instant GPU vector, each series' labels read into a struct: 4096
    GPUs' worth decodes several times faster than as dicts."""
    return decode(body, _gpu_decoder)


def host_of(labels: dict[str, str]) -> str | None:
    return _host_name(labels.get("Hostname", ""), labels.get("hostname", ""),
                      labels.get("instance", ""))


@lru_cache(maxsize=16384)
def _host_name(hostname_label: str, hostname: str, instance: str) -> str | None:
    """``Hostname``, else ``hostname``, else the host part of ``instance``,
    made visible (remembered: a fleet has a few hundred names, read every
    refresh for each GPU and metric)."""
    name = hostname_label or hostname
    if not name and instance:
        name = instance.rsplit(":", 1)[0] if instance.count(":") == 1 else instance
        name = name.strip("[]")
    return visible(name) if name else None


def _number(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def gpu_samples(series: list[_GpuSeries], metric: str | None = None) -> list[FleetSample]:
    """One sample per (Hostname, gpu, metric) of an instant GPU query
    (:func:`decode_gpu`); ``metric`` names series that lost ``__name__`` to an
    aggregation (:func:`gpu_query`)."""
    out: list[FleetSample] = []
    append, host_name = out.append, _host_name
    for s in series:
        labels, value = s.metric, s.value
        gpu = labels.gpu
        if value is None or not gpu.isdigit():
            continue
        host = host_name(labels.Hostname, labels.hostname, labels.instance)
        if host is None:
            continue
        try:
            v = float(value[1])
        except ValueError:
            continue
        if math.isfinite(v):
            append(FleetSample(host, int(gpu), metric or visible(labels.name), v))
    return out


def engine_samples(series: list[_Series]) -> list[FleetSample]:
    """One sample per (host, metric) of an instant engine query: the mean of
    the host's series of that metric (several ranks or models on one host)."""
    acc: dict[tuple[str, str], list[float]] = defaultdict(list)
    for s in series:
        name, host = s.metric.get("__name__", ""), host_of(s.metric)
        if host is None or not name.startswith(ENGINE_PREFIXES) or s.value is None:
            continue
        if (v := _number(s.value[1])) is not None:
            acc[(host, visible(name))].append(v)
    return [FleetSample(h, None, m, math.fsum(vs) / len(vs)) for (h, m), vs in acc.items()]


def range_points(series: list[_Series]) -> list[list[tuple[float, float]]]:
    """Each series of a range answer as [(unix time, value)], non-numbers dropped."""
    out = []
    for s in series:
        pts = [(float(t), v) for t, text in (s.values or []) if (v := _number(text)) is not None]
        out.append(pts)
    return out
