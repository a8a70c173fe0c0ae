"""The SIMULATED SGLang server's ``/metrics`` (Prometheus), via prometheus_client.

Names, types, label names and bucket bounds are SGLang 0.5's
(``python/sglang/srt/metrics/collector.py``): scheduler gauges labelled
``engine_type, model_name, pp_rank, tp_rank`` (one series per TP rank, as
with ``--enable-metrics-for-all-schedulers``), tokenizer counters and
latency histograms labelled ``model_name``. The values follow the simulated
decode / prefill lines (made up, like the log), so ``perftriage demo`` and the
tests read a real exposition page through the production scraper.
"""

from __future__ import annotations

import random

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

TTFT_BUCKETS = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400]
E2E_BUCKETS = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600,
               1200, 1800, 2400]
ITL_BUCKETS = [0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040,
               0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000,
               8.000]
QUEUE_BUCKETS = [0.0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100,
                 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000,
                 2500, 3000]
SCHEDULER_LABELS = ["engine_type", "model_name", "pp_rank", "tp_rank"]


class SimulatedSglangMetrics:
    """SGLang's metric families in their own registry, fed by the simulator."""

    def __init__(self, model: str, tp: int = 8, seed: int | None = None) -> None:
        self.registry = reg = CollectorRegistry()
        self.model = model
        self.rng = random.Random(seed)
        self.ranks = [("unified", model, "0", str(r)) for r in range(tp)]

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(f"sglang:{name}", doc, SCHEDULER_LABELS, registry=reg,
                         multiprocess_mode="mostrecent")

        self.running = gauge("num_running_reqs", "The number of running requests.")
        self.used_tokens = gauge("num_used_tokens", "The number of used tokens.")
        self.token_usage = gauge("token_usage", "The token usage.")
        self.gen_throughput = gauge("gen_throughput", "The generation throughput (token/s).")
        self.queue = gauge("num_queue_reqs", "The number of requests in the waiting queue.")
        self.cache_hit_rate = gauge("cache_hit_rate", "The prefix cache hit rate.")
        self.spec_accept_length = gauge("spec_accept_length",
                                        "The average acceptance length of speculative decoding.")
        self.queue_time = Histogram("sglang:queue_time_seconds",
                                    "Histogram of queueing time in seconds.", SCHEDULER_LABELS,
                                    registry=reg, buckets=QUEUE_BUCKETS)
        tok = ["model_name"]
        self.prompt_tokens = Counter("sglang:prompt_tokens_total",
                                     "Number of prefill tokens processed.", tok,
                                     registry=reg).labels(model)
        self.generation_tokens = Counter("sglang:generation_tokens_total",
                                         "Number of generation tokens processed.", tok,
                                         registry=reg).labels(model)
        self.cached_tokens = Counter("sglang:cached_tokens_total",
                                     "Number of cached prompt tokens.", tok,
                                     registry=reg).labels(model)
        self.requests = Counter("sglang:num_requests_total", "Number of requests processed.",
                                tok, registry=reg).labels(model)
        self.ttft = Histogram("sglang:time_to_first_token_seconds",
                              "Histogram of time to first token in seconds.", tok, registry=reg,
                              buckets=TTFT_BUCKETS).labels(model)
        self.itl = Histogram("sglang:inter_token_latency_seconds",
                             "Histogram of inter-token latency in seconds.", tok, registry=reg,
                             buckets=ITL_BUCKETS).labels(model)
        # observability/metrics_collector.py:1092-1115 (0.5.23), with --enable-mfu-metrics
        self.read_bytes = Counter(
            "sglang:estimated_read_bytes_per_gpu_total",
            "Estimated number of bytes read from memory per GPU "
            "(for Model FLOPs Utilization calculations).", SCHEDULER_LABELS, registry=reg)
        self.e2e = Histogram("sglang:e2e_request_latency_seconds",
                             "Histogram of End-to-end request latency in seconds", tok,
                             registry=reg, buckets=E2E_BUCKETS).labels(model)

    def serve(self, port: int, host: str = "127.0.0.1", scenario=None,
              backend: str | None = None) -> None:
        """Serve ``/metrics`` (and the simulated ``/get_server_info``,
        ``/start_profile``, ``/stop_profile``: ``sglang_http``) on ``host:port``
        from a daemon thread; with a ``scenario`` (a planted cause), its
        captures and its SIMULATED GPUs' readings follow it."""
        from perftriage.simulator.sglang_http import serve

        serve(self, port, tp=len(self.ranks), model=self.model, host=host, scenario=scenario,
              backend=backend)

    def _scheduler(self, running: int, queued: int, usage: float, gen: float) -> None:
        for rank in self.ranks:  # every TP rank's scheduler reports the same batch
            self.running.labels(*rank).set(running)
            self.queue.labels(*rank).set(queued)
            self.token_usage.labels(*rank).set(usage)
            self.gen_throughput.labels(*rank).set(gen)
            self.used_tokens.labels(*rank).set(int(usage * 412160))
            self.spec_accept_length.labels(*rank).set(0.0)  # no speculative decoding

    def decode(self, running: int, queued: int, usage: float, gen: float,
               seconds: float, read_gbs: float | None = None,
               spec_accept_len: float | None = None) -> None:
        """One decode batch line: ``gen`` tokens/s over ``seconds`` for ``running``
        requests; ``read_gbs`` the engine's read estimate per GPU (MFU metrics on)."""
        self._scheduler(running, queued, usage, gen)
        if spec_accept_len:
            for rank in self.ranks:
                self.spec_accept_length.labels(*rank).set(spec_accept_len)
        if read_gbs is not None:
            for rank in self.ranks:
                self.read_bytes.labels(*rank).inc(read_gbs * 1e9 * seconds)
        tokens = max(1, int(gen * seconds))
        self.generation_tokens.inc(tokens)
        per_request = gen / max(1, running)  # tokens/s of one request
        for _ in range(min(tokens, 64)):
            self.itl.observe(max(0.001, self.rng.gauss(1.0 / per_request, 0.08 / per_request)))
        if self.rng.random() < 0.3:
            self.e2e.observe(self.rng.uniform(20, 90))
            self.requests.inc()

    def prefill(self, running: int, queued: int, usage: float, new_tokens: int,
                new_seqs: int) -> None:
        self._scheduler(running, queued, usage, 0.0)
        cached = int(new_tokens * self.rng.uniform(0.1, 0.5))
        self.prompt_tokens.inc(new_tokens + cached)
        self.cached_tokens.inc(cached)
        for rank in self.ranks:
            self.cache_hit_rate.labels(*rank).set(cached / (new_tokens + cached))
        for _ in range(new_seqs):
            self.ttft.observe(self.rng.uniform(0.3, 2.5))
            wait = self.rng.expovariate(1 / 0.8) if queued else 0.0
            for rank in self.ranks:
                self.queue_time.labels(*rank).observe(wait)
