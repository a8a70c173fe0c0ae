"""What the session knows about each engine's /metrics endpoint.

Built only by the reducer from ``engine.sample`` / ``engine.status`` events,
so a replay derives exactly the figures the live session showed: the strip's
figures over the last :data:`WINDOW_S` seconds, and one row per scrape
interval of the inter-token latency histogram (its bucket increases and
p50/p90/p99) for the latency heatmap.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from perftriage.core.model.engine_window import (
    EngineFigures,
    derive,
    histogram_increase,
    increase,
    measured_ms_per_token,
    quantiles_of,
)
from perftriage.core.parse.engine_metrics import EngineSnapshot, HistogramCounts

WINDOW_S = 10.0  # the strip's rates and quantiles cover this much
HISTORY_POINTS = 300  # ~5 minutes of scrapes at 1 Hz
WINDOW_S_SAMPLES = 64  # samples kept: the window even when scrapes come faster than 1 Hz


@dataclass(frozen=True)
class LatencyRow:
    """One scrape interval of the ITL histogram: what landed in each bucket."""

    t: float
    bounds: tuple[float, ...]  # finite upper bounds (seconds); the last bucket is +Inf
    counts: tuple[float, ...]  # observations per bucket (not cumulative), len(bounds) + 1
    p50: float | None
    p90: float | None
    p99: float | None


@dataclass
class EngineState:
    source: str
    host: str
    url: str = ""
    conn_state: str = "connecting"
    reason: str | None = None
    samples: deque[tuple[float, EngineSnapshot]] = field(
        default_factory=lambda: deque(maxlen=WINDOW_S_SAMPLES))
    figures: EngineFigures = field(default_factory=EngineFigures)
    # mean ITL over the window, ms: the measured decode ms/token for the Gap view
    ms_per_token: float | None = None
    itl_rows: deque[LatencyRow] = field(default_factory=lambda: deque(maxlen=HISTORY_POINTS))
    gen_tps_history: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY_POINTS))
    sample_t: float | None = None
    # the whole session, for the report: increases summed step by step (across restarts)
    first_t: float | None = None
    scrapes: int = 0
    session_hists: dict[str, HistogramCounts] = field(default_factory=dict)
    session_counters: dict[str, float] = field(default_factory=dict)

    @property
    def latest(self) -> EngineSnapshot | None:
        return self.samples[-1][1] if self.samples else None


def _accumulate(es: EngineState, prev: EngineSnapshot, cur: EngineSnapshot) -> None:
    for name, value in cur.counters.items():
        if name in prev.counters:
            added = increase([prev.counters[name], value])
            es.session_counters[name] = es.session_counters.get(name, 0.0) + added
    for name, h in cur.histograms.items():
        if name not in prev.histograms:
            continue
        step = histogram_increase([prev.histograms[name], h])
        total = es.session_hists.get(name)
        if step is None:
            continue
        if total is None or total.bounds != step.bounds:
            es.session_hists[name] = step
        else:
            es.session_hists[name] = HistogramCounts(
                bounds=total.bounds, buckets=[a + b for a, b in zip(total.buckets, step.buckets)],
                sum=total.sum + step.sum, count=total.count + step.count)


def add_sample(es: EngineState, t: float, snapshot: EngineSnapshot) -> None:
    prev = es.samples[-1][1] if es.samples else None
    es.samples.append((t, snapshot))
    es.sample_t = t
    es.scrapes += 1
    if es.first_t is None:
        es.first_t = t
    if prev is not None:
        _accumulate(es, prev, snapshot)
    window = [(ts, s) for ts, s in es.samples if ts >= t - WINDOW_S]
    es.figures = derive(window)
    es.ms_per_token = measured_ms_per_token(window)
    if es.figures.gen_tps is not None:
        es.gen_tps_history.append(es.figures.gen_tps)
    if prev is None or "itl" not in snapshot.histograms or "itl" not in prev.histograms:
        return
    step = histogram_increase([prev.histograms["itl"], snapshot.histograms["itl"]])
    if step is None:
        return
    cum = step.buckets
    counts = tuple(c - (cum[i - 1] if i else 0.0) for i, c in enumerate(cum))
    q = quantiles_of(step)
    es.itl_rows.append(LatencyRow(t=t, bounds=tuple(step.bounds), counts=counts,
                                  p50=q.p50, p90=q.p90, p99=q.p99))


def engine_for(engines: dict[str, EngineState], source: str, host: str) -> EngineState:
    """The state of ``source``, created on its first event."""
    es = engines.get(source)
    if es is None:
        es = engines[source] = EngineState(source=source, host=host)
    return es
