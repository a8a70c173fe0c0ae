"""Deterministic engine.sample events for UI tests: an SGLang endpoint whose
inter-token latency drifts from ~20 ms to ~150 ms and back (no clock, no
randomness), with the fixture's gauges."""

from __future__ import annotations

import math

from perftriage.core.model import events as ev
from perftriage.core.parse.engine_metrics import EngineSnapshot, HistogramCounts
from perftriage.simulator.sglang_metrics import ITL_BUCKETS


def _observe(counts: list[float], value: float, n: float) -> None:
    for i, bound in enumerate(ITL_BUCKETS):
        if value <= bound:
            counts[i] += n
            return
    counts[-1] += n


def drifting_samples(n: int = 60, source: str = "engine:gpu-a", host: str = "gpu-a"):
    per_bucket = [0.0] * (len(ITL_BUCKETS) + 1)
    total_sum = gen = 0.0
    out: list[ev.Event] = [ev.EngineStatus(source=source, host=host, state="connecting",
                                           url="http://127.0.0.1:30000/metrics", t=0.0)]
    for k in range(n):
        center = 0.02 * math.exp(2.0 * (1 - math.cos(2 * math.pi * k / n)) / 2)
        for value, weight in ((center, 60), (center * 1.4, 25), (center * 3, 5)):
            _observe(per_bucket, value, weight)
            total_sum += value * weight
        gen += 90 * 32
        cumulative = [sum(per_bucket[: i + 1]) for i in range(len(per_bucket))]
        snap = EngineSnapshot(
            engine="sglang",
            gauges={"running": 32.0, "queued": float(k % 7), "token_usage": 0.42,
                    "cache_hit_rate": 0.31},
            counters={"generation_tokens": gen, "prompt_tokens": 40.0 * gen},
            histograms={"itl": HistogramCounts(bounds=list(ITL_BUCKETS), buckets=cumulative,
                                               sum=total_sum, count=cumulative[-1])},
            metrics_seen=42)
        out.append(ev.EngineSample(source=source, host=host, snapshot=snap, t=1.0 + k))
    return out
