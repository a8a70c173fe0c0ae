"""An inference engine's Prometheus ``/metrics`` page -> one typed snapshot.

The exposition text is parsed by ``prometheus_client``'s own text parser
(histograms included); this module only knows which of the many series the
engines export answer triage's questions, under the names their sources give
them, old and new:

- SGLang ``python/sglang/srt/metrics/collector.py`` (``sglang:`` prefix). Up to
  0.4 the inter-token histogram was ``time_per_output_token_seconds``, since
  then ``inter_token_latency_seconds``; scheduler gauges carry ``tp_rank`` /
  ``pp_rank`` (and ``dp_rank`` with data parallelism) next to ``model_name``
  and ``engine_type``.
- vLLM V0 ``vllm/engine/metrics.py`` and V1 ``vllm/v1/metrics/loggers.py``
  (``vllm:`` prefix). V1 labels every series with ``engine`` (the data
  parallel engine index). ``gpu_cache_usage_perc`` was renamed
  ``kv_cache_usage_perc`` in 0.9, ``gpu_prefix_cache_{queries,hits}`` became
  ``prefix_cache_{queries,hits}``, and in 0.11 ``time_per_output_token_seconds``
  became ``inter_token_latency_seconds``; the deprecated names are served
  next to the new ones for a while, so the new name wins when both exist.
- At SGLang 0.5.23 / vLLM 0.33.0 both engines estimate their own memory
  traffic (``sglang:estimated_read_bytes_per_gpu_total``,
  sglang/srt/observability/metrics_collector.py:1100 with
  ``--enable-mfu-metrics``; ``vllm:estimated_read_bytes_per_gpu_total``,
  vllm/v1/metrics/perf.py:1776): a counter per GPU, so several engines'
  values are averaged (each is one GPU's traffic), not added.

Unknown metrics are ignored; missing ones are simply absent from the
snapshot (n/a). A snapshot holds *cumulative* values as the engine served
them; rates and quantiles over a window are
:mod:`perftriage.core.model.engine_window`'s job.

Aggregation across series: series that differ only in a *rank* label
(``tp_rank``, ``pp_rank``, ...) describe the same requests seen from several
ranks of one scheduler, so one of them is kept (the largest); series that
differ in anything else (``engine``, ``dp_rank``) are different requests and
are added up (request counts, token counters, histogram buckets) or averaged
(fractions such as KV usage). The per-series gauges are kept in ``ranks``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

import msgspec

from perftriage.core.sanitize import visible

MAX_EXPOSITION_BYTES = 16 * 1024 * 1024

# labels that name a rank of the same scheduler (its series repeat each other)
RANK_LABELS = frozenset({"tp_rank", "pp_rank", "moe_ep_rank", "attn_tp_rank", "attn_cp_rank"})
# labels worth showing per rank in the engine strip (the rest is model name, etc.)
RANK_KEYS = ("engine", "dp_rank", "tp_rank", "pp_rank")

ENGINE_PREFIXES = (("sglang:", "sglang"), ("vllm:", "vllm"))

# field -> candidate sample names, preferred first (new names before deprecated ones)
GAUGES: dict[str, tuple[str, ...]] = {
    "running": ("sglang:num_running_reqs", "vllm:num_requests_running"),
    "queued": ("sglang:num_queue_reqs", "vllm:num_requests_waiting"),
    "token_usage": ("sglang:token_usage", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    "cache_hit_rate": ("sglang:cache_hit_rate", "vllm:gpu_prefix_cache_hit_rate"),
    "spec_accept_length": ("sglang:spec_accept_length",),
    "gen_throughput": ("sglang:gen_throughput", "vllm:avg_generation_throughput_toks_per_s"),
}
# gauges that are counts (summed across engines); the others are fractions (averaged)
COUNT_GAUGES = frozenset({"running", "queued", "gen_throughput"})
# counters per GPU: one engine's value is one GPU's, so engines are averaged
PER_GPU_COUNTERS = frozenset({"read_bytes", "write_bytes"})

COUNTERS: dict[str, tuple[str, ...]] = {
    "generation_tokens": ("sglang:generation_tokens_total", "vllm:generation_tokens_total"),
    "prompt_tokens": ("sglang:prompt_tokens_total", "vllm:prompt_tokens_total"),
    "cached_tokens": ("sglang:cached_tokens_total", "vllm:prompt_tokens_cached_total"),
    "prefix_cache_hits": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    "prefix_cache_queries": ("vllm:prefix_cache_queries_total",
                             "vllm:gpu_prefix_cache_queries_total"),
    "spec_accepted_tokens": ("vllm:spec_decode_num_accepted_tokens_total",),
    "spec_drafts": ("vllm:spec_decode_num_drafts_total",),
    "spec_draft_tokens": ("vllm:spec_decode_num_draft_tokens_total",),
    # the engine's own estimates of memory traffic, bytes per GPU
    "read_bytes": ("sglang:estimated_read_bytes_per_gpu_total",
                   "vllm:estimated_read_bytes_per_gpu_total"),
    "write_bytes": ("sglang:estimated_write_bytes_per_gpu_total",
                    "vllm:estimated_write_bytes_per_gpu_total"),
    # requests evicted to make room: vLLM preempts, SGLang retracts
    "preemptions": ("vllm:num_preemptions_total", "sglang:num_retracted_requests_total"),
    "requests": ("sglang:num_requests_total", "vllm:request_success_total"),
}

HISTOGRAMS: dict[str, tuple[str, ...]] = {
    "ttft": ("sglang:time_to_first_token_seconds", "vllm:time_to_first_token_seconds"),
    "itl": ("sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds",
            "vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
    "e2e": ("sglang:e2e_request_latency_seconds", "vllm:e2e_request_latency_seconds"),
    "queue": ("sglang:queue_time_seconds", "vllm:request_queue_time_seconds"),
}


class MetricsFormatError(ValueError):
    """The body is not Prometheus exposition text (one-line reason)."""


class HistogramCounts(msgspec.Struct, frozen=True, omit_defaults=True):
    """One histogram, cumulative: ``buckets[i]`` observations were <= ``bounds[i]``;
    the last bucket is ``+Inf`` (its bound is not stored)."""

    bounds: list[float]
    buckets: list[float]
    sum: float = 0.0
    count: float = 0.0


class RankGauges(msgspec.Struct, frozen=True, omit_defaults=True):
    """The gauges of one series (one rank / engine), with its identifying labels."""

    labels: dict[str, str] = {}
    running: float | None = None
    queued: float | None = None
    token_usage: float | None = None


class EngineSnapshot(msgspec.Struct, frozen=True, omit_defaults=True):
    """What one scrape of ``/metrics`` said (cumulative counters, current gauges)."""

    engine: str | None = None  # "sglang" / "vllm" from the metric prefix
    gauges: dict[str, float] = {}
    counters: dict[str, float] = {}
    histograms: dict[str, HistogramCounts] = {}
    ranks: list[RankGauges] = []
    metrics_seen: int = 0  # metric families on the page (known or not)


LabelKey = tuple[tuple[str, str], ...]


def _key(labels: dict[str, str], drop: Iterable[str] = ()) -> LabelKey:
    dropped = set(drop)
    return tuple(sorted((k, v) for k, v in labels.items() if k not in dropped))


class _Page:
    """The samples of one page, indexed by sample name."""

    def __init__(self) -> None:
        self.flat: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
        # histogram base name -> series key -> {"le": {bound: count}, "sum":, "count":}
        self.hist: dict[str, dict[LabelKey, dict]] = defaultdict(dict)
        self.families: set[str] = set()

    def add(self, name: str, labels: dict[str, str], value: float) -> None:
        if name.endswith("_bucket") and "le" in labels:
            base = name[: -len("_bucket")]
            rest = {k: v for k, v in labels.items() if k != "le"}
            entry = self.hist[base].setdefault(_key(rest), {"labels": rest, "le": {}})
            try:
                entry["le"][float(labels["le"])] = value
            except ValueError:
                return
            return
        self.flat[name].append((labels, value))

    def histogram_series(self, base: str) -> list[tuple[dict[str, str], HistogramCounts]]:
        out = []
        sums = {_key(lb): v for lb, v in self.flat.get(base + "_sum", ())}
        counts = {_key(lb): v for lb, v in self.flat.get(base + "_count", ())}
        for key, entry in self.hist.get(base, {}).items():
            les = sorted(entry["le"].items())
            if not les or not math.isinf(les[-1][0]):
                continue  # no +Inf bucket: not a usable histogram
            bounds = [b for b, _ in les[:-1]]
            buckets = [c for _, c in les]
            out.append((entry["labels"], HistogramCounts(
                bounds=bounds, buckets=buckets,
                sum=sums.get(key, 0.0), count=counts.get(key, buckets[-1]))))
        return out


def _read_page(text: str) -> _Page:
    # imported here: a transcript's reader (triage, report) never parses a
    # page, and the package costs 30 ms at start
    from prometheus_client.parser import text_string_to_metric_families

    page = _Page()
    try:
        for family in text_string_to_metric_families(text):
            if not family.name.endswith("_created"):
                page.families.add(family.name)
            for s in family.samples:
                if s.name.endswith("_created"):
                    continue
                value = float(s.value)
                if math.isnan(value):
                    continue
                page.add(s.name, dict(s.labels), value)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise MetricsFormatError(f"not Prometheus exposition text: {first[:120]}") from None
    return page


def _first_present(page: _Page, names: tuple[str, ...], hist: bool = False) -> str | None:
    for name in names:
        if (page.hist.get(name) if hist else page.flat.get(name)):
            return name
    return None


def _groups(series: Iterable[tuple[dict[str, str], float]]) -> list[float]:
    """One value per group of series that differ only in rank labels (the largest)."""
    best: dict[LabelKey, float] = {}
    for labels, value in series:
        k = _key(labels, RANK_LABELS)
        best[k] = max(best.get(k, value), value)
    return list(best.values())


def _merge_histograms(items: list[HistogramCounts]) -> HistogramCounts | None:
    items = [h for h in items if h.bounds == items[0].bounds] if items else []
    if not items:
        return None
    buckets = [sum(col) for col in zip(*(h.buckets for h in items))]
    return HistogramCounts(bounds=list(items[0].bounds), buckets=buckets,
                           sum=sum(h.sum for h in items), count=sum(h.count for h in items))


def _engine_of(page: _Page) -> str | None:
    names = list(page.flat) + list(page.hist)
    for prefix, engine in ENGINE_PREFIXES:
        if any(n.startswith(prefix) for n in names):
            return engine
    return None


def _ranks(page: _Page, chosen: dict[str, str]) -> list[RankGauges]:
    rows: dict[LabelKey, dict] = {}
    for field in ("running", "queued", "token_usage"):
        name = chosen.get(field)
        for labels, value in page.flat.get(name, ()) if name else ():
            shown = {k: visible(labels[k])[:40] for k in RANK_KEYS if k in labels}
            row = rows.setdefault(_key(shown), {"labels": shown})
            row[field] = value
    if len(rows) < 2:
        return []  # one series: the headline figures say it all
    return [RankGauges(**row) for _, row in sorted(rows.items())]


def _wanted_names() -> tuple[frozenset[str], frozenset[str]]:
    """(sample names we read, family names of their # HELP / # TYPE lines)."""
    samples: set[str] = set()
    families: set[str] = set()
    for names in (*GAUGES.values(), *COUNTERS.values()):
        samples.update(names)
        families.update(names)
        families.update(n[: -len("_total")] for n in names if n.endswith("_total"))
    for names in HISTOGRAMS.values():
        families.update(names)
        samples.update(n + suffix for n in names for suffix in ("_bucket", "_sum", "_count"))
    return frozenset(samples), frozenset(families)


WANTED_SAMPLES, WANTED_FAMILIES = _wanted_names()


def _sample_name(line: str) -> str:
    end = len(line)
    for stop in ("{", " ", "\t"):
        i = line.find(stop)
        if 0 <= i < end:
            end = i
    return line[:end]


def _select(text: str) -> tuple[str, int]:
    """The lines of the series we read (prometheus_client's parser is pure
    Python, ~0.02-0.1 ms a line: a vLLM page with 8 engines is 2000+ lines,
    most of them histograms nobody here looks at; of a new and a deprecated
    name only the one we use is kept) and the number of metric families on
    the page, from a cheap scan of its names."""
    samples: dict[str, list[str]] = defaultdict(list)
    meta: dict[str, list[str]] = defaultdict(list)
    typed: set[str] = set()
    names: set[str] = set()
    for line in text.splitlines():
        if not line:
            continue
        if line[0] == "#":
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("TYPE", "HELP"):
                if parts[1] == "TYPE" and not parts[2].endswith("_created"):
                    typed.add(parts[2])
                if parts[2] in WANTED_FAMILIES:
                    meta[parts[2]].append(line)
            continue
        name = _sample_name(line)
        if not name.endswith("_created"):
            names.add(name)
        if name in WANTED_SAMPLES:
            samples[name].append(line)
    kept: list[str] = []

    def keep(family: str, series: tuple[str, ...]) -> None:
        kept.extend(meta.get(family, ()))
        if family.endswith("_total"):
            kept.extend(meta.get(family[: -len("_total")], ()))
        for name in series:
            kept.extend(samples.get(name, ()))

    for table in (GAUGES, COUNTERS):
        for candidates in table.values():
            if (family := next((n for n in candidates if n in samples), None)) is not None:
                keep(family, (family,))
    for candidates in HISTOGRAMS.values():
        if (family := next((n for n in candidates if n + "_bucket" in samples), None)) is not None:
            keep(family, (family + "_bucket", family + "_sum", family + "_count"))
    return "\n".join(kept) + "\n", len(typed) if typed else len(names)


def parse_exposition(text: str) -> EngineSnapshot:
    """The snapshot of one ``/metrics`` body; raises :class:`MetricsFormatError`.

    Only the series we read go through prometheus_client's parser; a page
    with none of them is parsed whole, so that a page that is not exposition
    text at all is still reported as such."""
    if len(text) > MAX_EXPOSITION_BYTES:
        raise MetricsFormatError(f"metrics page larger than {MAX_EXPOSITION_BYTES} bytes")
    selected, families = _select(text)
    page = _read_page(selected if selected.strip() else text)
    if not selected.strip():  # the whole page was parsed: count its families
        families = len(page.families)
    gauges: dict[str, float] = {}
    chosen: dict[str, str] = {}
    for field, names in GAUGES.items():
        name = _first_present(page, names)
        if name is None:
            continue
        values = _groups(page.flat[name])
        value = sum(values) if field in COUNT_GAUGES else sum(values) / len(values)
        if field == "spec_accept_length" and value <= 0:
            continue  # SGLang exports 0 when speculative decoding is off
        chosen[field] = name
        gauges[field] = value
    counters: dict[str, float] = {}
    for field, names in COUNTERS.items():
        name = _first_present(page, names)
        if name is not None:
            values = _groups(page.flat[name])
            counters[field] = (sum(values) / len(values) if field in PER_GPU_COUNTERS
                               else sum(values))
    histograms: dict[str, HistogramCounts] = {}
    for field, names in HISTOGRAMS.items():
        name = _first_present(page, names, hist=True)
        if name is None:
            continue
        kept: dict[LabelKey, HistogramCounts] = {}
        for labels, h in page.histogram_series(name):
            k = _key(labels, RANK_LABELS)
            if k not in kept or h.count > kept[k].count:
                kept[k] = h
        merged = _merge_histograms(list(kept.values()))
        if merged is not None:
            histograms[field] = merged
    return EngineSnapshot(engine=_engine_of(page), gauges=gauges, counters=counters,
                          histograms=histograms, ranks=_ranks(page, chosen),
                          metrics_seen=families)
