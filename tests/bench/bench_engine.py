"""Engine /metrics benchmark: ``python -m tests.bench.bench_engine [--repeat 50]``.

What a once-a-second scrape costs, measured in one run against baselines:

- parsing: a vLLM 0.11 page with 8 data-parallel engines (every series
  vLLM's V1 logger defines, from prometheus_client) -> prometheus_client's
  parser alone (the baseline), our snapshot (that parser + the name table +
  aggregation), and the reducer step (window figures, heatmap row);
- fetching the page: from a real HTTP server on 127.0.0.1, directly (the
  localhost path), through a loopback OpenSSH sshd over one kept-alive
  direct-tcpip channel (the remote path), against two baselines: a new
  direct-tcpip channel per request, and ``curl`` run in the host's shell
  pool (what one would write without port forwarding).

Medians of --repeat; milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from perftriage.core.model.engine_state import EngineState, add_sample
from perftriage.core.parse.engine_metrics import parse_exposition
from perftriage.transport.http_get import HttpGetter
from perftriage.transport.local import LocalTransport
from tests.fixtures.metrics.generate import VLLM_V1_ITL, VLLM_V1_REQUEST, VLLM_V1_TTFT
from tests.support.metrics_server import MetricsServer
from tests.support.sshd import SshServer


def big_vllm_page(engines: int = 8, seed_obs: int = 2000) -> str:
    reg = CollectorRegistry()
    lb = ["model_name", "engine"]
    ids = [str(i) for i in range(engines)]
    for name in ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc",
                 "gpu_cache_usage_perc"):
        g = Gauge(f"vllm:{name}", name, lb, registry=reg)
        for e in ids:
            g.labels("m", e).set(3)
    for name in ("prompt_tokens", "generation_tokens", "prefix_cache_queries",
                 "prefix_cache_hits", "num_preemptions", "gpu_prefix_cache_queries",
                 "gpu_prefix_cache_hits"):
        c = Counter(f"vllm:{name}", name, lb, registry=reg)
        for e in ids:
            c.labels("m", e).inc(12345)
    hists = [("time_to_first_token_seconds", VLLM_V1_TTFT),
             ("time_per_output_token_seconds", VLLM_V1_ITL),
             ("inter_token_latency_seconds", VLLM_V1_ITL),
             ("e2e_request_latency_seconds", VLLM_V1_REQUEST),
             ("request_queue_time_seconds", VLLM_V1_REQUEST),
             ("request_inference_time_seconds", VLLM_V1_REQUEST),
             ("request_prefill_time_seconds", VLLM_V1_REQUEST),
             ("request_decode_time_seconds", VLLM_V1_REQUEST),
             ("request_prompt_tokens", [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000]),
             ("request_generation_tokens", [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000]),
             ("iteration_tokens_total", [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096])]
    for name, buckets in hists:
        h = Histogram(f"vllm:{name}", name, lb, registry=reg, buckets=buckets)
        for e in ids:
            child = h.labels("m", e)
            for i in range(seed_obs // 100):
                child.observe(buckets[i % len(buckets)] * 0.9)
    return generate_latest(reg).decode()


def median_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


async def amedian_ms(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        await fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def paired_median_ms(fns, repeat: int) -> list[float]:
    """Medians of each of ``fns``, run in turn within each round (fair on a busy box)."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[i].append((time.perf_counter() - t0) * 1000)
    return [statistics.median(t) for t in times]


def parse_rows(page: str, repeat: int) -> list[tuple[str, str]]:
    es = EngineState("engine:bench", "bench")
    snap = parse_exposition(page)
    t = [0.0]

    def reduce_step() -> None:
        t[0] += 1.0
        add_sample(es, t[0], snap)

    base, ours = paired_median_ms([lambda: list(text_string_to_metric_families(page)),
                                   lambda: parse_exposition(page)], repeat)
    return [
        (f"page: vLLM 0.11, 8 engines, {len(page) / 1024:.0f} KiB, {page.count(chr(10))} lines",
         ""),
        ("prometheus_client parse of the whole page (baseline)", f"{base:.2f}"),
        ("parse_exposition (the series we read, parsed by it)", f"{ours:.2f}"),
        ("reducer step (window figures + heatmap row)", f"{median_ms(reduce_step, repeat):.3f}"),
    ]


async def fetch_rows(page: str, repeat: int, root: Path) -> list[tuple[str, str]]:
    from perftriage.transport.ssh import SSHTransport

    rows = []
    with MetricsServer(page) as server, SshServer(root / "sshd") as sshd:
        local = HttpGetter(LocalTransport(), server.url)
        rows.append(("localhost: loopback GET, kept alive",
                     f"{await amedian_ms(local.get, repeat):.2f}"))
        await local.close()
        ssh = SSHTransport("bench", sshd.alias, ssh_config=sshd.ssh_config)
        await ssh.check()
        kept = HttpGetter(ssh, server.url)
        await kept.get()
        rows.append(("SSH: direct-tcpip channel, kept alive (perftriage)",
                     f"{await amedian_ms(kept.get, repeat):.2f}"))
        await kept.close()

        async def fresh() -> None:
            getter = HttpGetter(ssh, server.url)
            await getter.get()
            await getter.close()

        rows.append(("SSH baseline: a new channel per scrape", f"{await amedian_ms(fresh, repeat):.2f}"))
        if shutil.which("curl"):
            async def curl() -> None:
                result = await ssh.run(f"curl -s {server.url}", timeout=10)
                assert len(result.stdout) > 1000

            rows.append(("SSH baseline: curl in the host's shell pool",
                         f"{await amedian_ms(curl, repeat):.2f}"))
        await ssh.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()
    page = big_vllm_page()
    rows = parse_rows(page, args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        rows += asyncio.run(fetch_rows(page, args.repeat, Path(tmp)))
    width = max(len(r[0]) for r in rows)
    print(f"{'step':<{width}}  median ms (n={args.repeat})")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
