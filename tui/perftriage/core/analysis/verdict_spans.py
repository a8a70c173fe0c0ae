"""The live gap's story per host: spans of one verdict, debounced.

``gap.sample`` events come once a second per host, and a verdict computed
from one second of counters flickers at a threshold (idle 29 % / 31 %). A
verdict therefore *changes* only after the new one has held for
:data:`HOLD_S` seconds; a shorter excursion stays inside the span around it.
Each span says from when to when, which verdict, and the median of the
figures over its samples — per host, never mixing hosts or phases.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from perftriage.core.model.verdict_hold import HOLD_S

MEDIAN_KEYS = ("floor_ms", "measured_ms", "gap", "dram_bw_gbs", "useful_bw_gbs",
               "traffic_ratio", "idle_pct", "dram_busy_pct")


@dataclass
class VerdictSpan:
    host: str
    verdict_kind: str
    verdict: str  # the words of the span's latest sample of its own kind
    start_t: float
    end_t: float
    samples: list[Any] = field(default_factory=list)

    def median(self, key: str) -> float | None:
        values = [getattr(s, key) for s in self.samples if getattr(s, key, None) is not None]
        return statistics.median(values) if values else None

    def medians(self) -> dict[str, float | None]:
        return {key: self.median(key) for key in MEDIAN_KEYS}

    def public(self) -> dict[str, Any]:
        """The JSON object of a span (``replay --json``)."""
        return {"host": self.host, "from_t": round(self.start_t, 3),
                "to_t": round(self.end_t, 3), "verdict_kind": self.verdict_kind,
                "verdict": self.verdict, "samples": len(self.samples),
                **{k: None if v is None else round(v, 3) for k, v in self.medians().items()}}


def spans_by_host(samples: Iterable[Any], hold_s: float = HOLD_S) -> dict[str, list[VerdictSpan]]:
    """``samples``: GapSample events in time order (any hosts)."""
    per_host: dict[str, list[Any]] = {}
    for s in samples:
        per_host.setdefault(s.host, []).append(s)
    return {host: _spans(host, rows, hold_s) for host, rows in per_host.items()}


def _spans(host: str, samples: list[Any], hold_s: float) -> list[VerdictSpan]:
    spans: list[VerdictSpan] = []
    pending: list[Any] = []  # samples of a verdict that has not held long enough yet
    for s in samples:
        current = spans[-1] if spans else None
        if current is None:
            spans.append(_new(host, s))
            continue
        if s.verdict_kind == current.verdict_kind:
            _absorb(current, pending)  # the excursion did not hold: it stays inside
            pending = []
            _add(current, s)
            continue
        if pending and pending[0].verdict_kind != s.verdict_kind:
            _absorb(current, pending)
            pending = []
        pending.append(s)
        if pending[-1].t - pending[0].t >= hold_s:
            span = _new(host, pending[0])
            for p in pending[1:]:
                _add(span, p)
            spans.append(span)
            pending = []
    if pending and spans:
        _absorb(spans[-1], pending)
    return spans


def _new(host: str, s: Any) -> VerdictSpan:
    return VerdictSpan(host=host, verdict_kind=s.verdict_kind, verdict=s.verdict,
                       start_t=s.t, end_t=s.t, samples=[s])


def _add(span: VerdictSpan, s: Any) -> None:
    span.samples.append(s)
    span.end_t = s.t
    if s.verdict_kind == span.verdict_kind:
        span.verdict = s.verdict


def _absorb(span: VerdictSpan, excursion: list[Any]) -> None:
    for s in excursion:
        _add(span, s)


def current_span(samples: Iterable[Any], host: str, at: float | None = None,
                 hold_s: float = HOLD_S) -> VerdictSpan | None:
    """The debounced verdict of ``host`` at ``at`` (default: the last sample)."""
    rows = [s for s in samples if s.host == host and (at is None or s.t <= at)]
    spans = _spans(host, rows, hold_s) if rows else []
    return spans[-1] if spans else None


GAP_KEYS = ("floor_ms", "measured_ms", "gap", "peak_gbs", "dram_bw_gbs", "dram_busy_pct",
            "useful_bw_gbs", "traffic_ratio", "idle_pct", "tokens_per_s", "nvlink_pct",
            "batch", "slowest_gpu", "outlier_side", "verdict", "verdict_kind", "source")


def live_gaps_json(samples: Iterable[Any], at: float) -> dict[str, dict[str, Any]]:
    """Per host, the live gap at ``at``: its latest ``gap.sample`` up to then
    (``sample_t``, ``age_s``), and the debounced verdict span it is in."""
    rows = [s for s in samples if s.t <= at]
    out: dict[str, dict[str, Any]] = {}
    for host, spans in spans_by_host(rows).items():
        last = spans[-1].samples[-1]
        out[host] = {"sample_t": last.t, "age_s": round(at - last.t, 3),
                     **{k: getattr(last, k, None) for k in GAP_KEYS},
                     "span": spans[-1].public()}
    return out
