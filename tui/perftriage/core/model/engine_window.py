"""Rates and latency quantiles over a window of engine snapshots.

Counters and histogram buckets are cumulative, so what happened in a window
is the *increase* from its first snapshot to its last. A server that
restarts starts its counters again from zero: like Prometheus' ``increase()``
a drop between two consecutive snapshots counts as a reset, and the value
after it is taken as the increase of that step, so rates are never negative.

Quantiles follow Prometheus' ``histogram_quantile``: the bucket holding the
rank ``q * count`` is found on the cumulative bucket increases and the value
is interpolated linearly inside it (the first bucket starts at 0; a rank in
the ``+Inf`` bucket answers the largest finite bound).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import msgspec

from perftriage.core.parse.engine_metrics import EngineSnapshot, HistogramCounts

QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))


def quantile(q: float, bounds: Sequence[float], cumulative: Sequence[float]) -> float | None:
    """Prometheus ``histogram_quantile(q)`` of cumulative bucket counts
    (``cumulative[-1]`` is the ``+Inf`` bucket); None without observations."""
    if not cumulative or cumulative[-1] <= 0 or not 0.0 <= q <= 1.0:
        return None
    rank = q * cumulative[-1]
    i = next(i for i, c in enumerate(cumulative) if c >= rank)
    if i >= len(bounds):  # the +Inf bucket
        return bounds[-1] if bounds else None
    start = 0.0 if i == 0 else bounds[i - 1]
    below = 0.0 if i == 0 else cumulative[i - 1]
    inside = cumulative[i] - below
    if inside <= 0:
        return bounds[i]
    if i == 0 and bounds[0] <= 0:
        return bounds[0]
    return start + (bounds[i] - start) * (rank - below) / inside


def increase(values: Sequence[float]) -> float:
    """Increase of a counter over consecutive readings, across resets."""
    total = 0.0
    for prev, cur in zip(values, values[1:]):
        total += cur - prev if cur >= prev else cur
    return total


def histogram_increase(hists: Sequence[HistogramCounts]) -> HistogramCounts | None:
    """Bucket-wise increase over consecutive readings of one histogram. A drop
    of the total count is a restart of the server (the new readings are the
    increase of that step); new bucket bounds (another server version) start
    the window again from that reading, since differing buckets cannot add."""
    if len(hists) < 2:
        return None
    bounds = list(hists[0].bounds)
    buckets = [0.0] * len(hists[0].buckets)
    total_sum = total_count = 0.0
    for prev, cur in zip(hists, hists[1:]):
        if cur.bounds != prev.bounds:
            bounds, buckets = list(cur.bounds), list(cur.buckets)
            total_sum, total_count = cur.sum, cur.count
            continue
        if cur.count < prev.count:
            steps, d_sum, d_count = list(cur.buckets), cur.sum, cur.count
        else:
            steps = [max(0.0, c - p) for c, p in zip(cur.buckets, prev.buckets)]
            d_sum, d_count = cur.sum - prev.sum, cur.count - prev.count
        buckets = [a + b for a, b in zip(buckets, steps)]
        total_sum += d_sum
        total_count += d_count
    return HistogramCounts(bounds=bounds, buckets=buckets, sum=total_sum, count=total_count)


class Quantiles(msgspec.Struct, omit_defaults=False):
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None


def quantiles_of(h: HistogramCounts | None) -> Quantiles:
    if h is None:
        return Quantiles()
    return Quantiles(**{name: quantile(q, h.bounds, h.buckets) for name, q in QUANTILES})


def mean_of(h: HistogramCounts | None) -> float | None:
    if h is None or h.count <= 0:
        return None
    return h.sum / h.count


class EngineFigures(msgspec.Struct, omit_defaults=False):
    """What `perftriage engine --json` prints (null where the engine says nothing)."""

    engine: str | None = None
    running: float | None = None
    queued: float | None = None
    token_usage: float | None = None
    gen_tps: float | None = None
    prompt_tps: float | None = None
    ttft_s: Quantiles = msgspec.field(default_factory=Quantiles)
    itl_s: Quantiles = msgspec.field(default_factory=Quantiles)
    e2e_s: Quantiles = msgspec.field(default_factory=Quantiles)
    cache_hit_rate: float | None = None
    spec_accept_length: float | None = None
    metrics_seen: int = 0
    # the engine's own estimate of memory read GB/s per GPU over the window
    # (estimated_read_bytes_per_gpu_total), and requests preempted in it
    engine_read_gbs: float | None = None
    preemptions: float | None = None

    def to_json_dict(self) -> dict[str, Any]:
        return msgspec.to_builtins(self)


def _ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den <= 0:
        return None
    return num / den


def _counter_increase(snaps: Sequence[EngineSnapshot], name: str) -> float | None:
    values = [s.counters[name] for s in snaps if name in s.counters]
    return increase(values) if len(values) >= 2 else None


def window_histogram(snaps: Sequence[EngineSnapshot], name: str) -> HistogramCounts | None:
    return histogram_increase([s.histograms[name] for s in snaps if name in s.histograms])


def _cache_hit_rate(snaps: Sequence[EngineSnapshot], last: EngineSnapshot) -> float | None:
    for hits, queries in (("prefix_cache_hits", "prefix_cache_queries"),
                          ("cached_tokens", "prompt_tokens")):
        rate = _ratio(_counter_increase(snaps, hits), _counter_increase(snaps, queries))
        if rate is not None:
            return rate
    return last.gauges.get("cache_hit_rate")


def _spec_accept_length(snaps: Sequence[EngineSnapshot], last: EngineSnapshot) -> float | None:
    if "spec_accept_length" in last.gauges:
        return last.gauges["spec_accept_length"]
    per_draft = _ratio(_counter_increase(snaps, "spec_accepted_tokens"),
                       _counter_increase(snaps, "spec_drafts"))
    # vLLM's convention: the mean acceptance length counts the bonus token
    return None if per_draft is None else 1.0 + per_draft


def derive(window: Sequence[tuple[float, EngineSnapshot]]) -> EngineFigures:
    """Figures over ``window`` = (time in seconds, snapshot) pairs, oldest first:
    gauges from the last snapshot, rates and quantiles from first to last."""
    if not window:
        return EngineFigures()
    t0, t1 = window[0][0], window[-1][0]
    snaps = [s for _, s in window]
    last = snaps[-1]
    span = t1 - t0
    gen = _counter_increase(snaps, "generation_tokens")
    prompt = _counter_increase(snaps, "prompt_tokens")
    return EngineFigures(
        engine=last.engine,
        running=last.gauges.get("running"),
        queued=last.gauges.get("queued"),
        token_usage=last.gauges.get("token_usage"),
        gen_tps=_ratio(gen, span),
        prompt_tps=_ratio(prompt, span),
        ttft_s=quantiles_of(window_histogram(snaps, "ttft")),
        itl_s=quantiles_of(window_histogram(snaps, "itl")),
        e2e_s=quantiles_of(window_histogram(snaps, "e2e")),
        cache_hit_rate=_cache_hit_rate(snaps, last),
        spec_accept_length=_spec_accept_length(snaps, last),
        metrics_seen=last.metrics_seen,
        engine_read_gbs=_gbs(_ratio(_counter_increase(snaps, "read_bytes"), span)),
        preemptions=_counter_increase(snaps, "preemptions"),
    )


def _gbs(bytes_per_s: float | None) -> float | None:
    return None if bytes_per_s is None else bytes_per_s / 1e9


def measured_ms_per_token(window: Sequence[tuple[float, EngineSnapshot]]) -> float | None:
    """Mean inter-token latency over the window in ms (sum/count of the ITL
    histogram's increase: exact, not interpolated) - the measured decode
    ms/token the Gap view compares with the bandwidth floor."""
    mean = mean_of(window_histogram([s for _, s in window], "itl"))
    return None if mean is None or not math.isfinite(mean) else mean * 1000.0
