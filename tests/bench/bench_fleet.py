"""Fleet benchmark: ``python -m tests.bench.bench_fleet [--hosts 512] [--gpus 8] [--repeat 9]``.

A real Prometheus (tests/support/prometheus.py) scrapes emulated dcgm-exporter and
SGLang pages for 512 hosts x 8 GPUs (1024 targets). In one run:

- baseline: one raw ``/api/v1/query`` of the GPU series (httpx, body only);
- one fleet read: perftriage's two queries, decoded into samples;
- one fleet refresh: the read plus medians, MADs and the ranked outliers
  (what the Fleet view does every interval), median and max wall time, and
  the CPU time it costs: perftriage's own and Prometheus's (its process's
  CPU during the refreshes less what it spends scraping meanwhile, measured
  just before): on a shared 2-core box the CPU figures say what the wall
  time would be on a quiet one;
- the Fleet view's render of that summary (when the UI is there);
- the process's RSS before and after.

Target: Fleet view refresh <= 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import httpx
import psutil

from tests.bench.table import print_table
from tests.support.prometheus import PrometheusServer
from perftriage.core.fleet import promql
from perftriage.services.sources.fleet import FleetSource
from perftriage.transport.prometheus import PrometheusClient
from perftriage.services.investigation.session import Session


def rss_mib() -> float:
    return psutil.Process().memory_info().rss / 2**20


def cpu_s(proc: psutil.Process) -> float:
    t = proc.cpu_times()
    return t.user + t.system


async def _median(fn, n: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(n):
        t0 = time.perf_counter()
        result = await fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


async def _timed(fn, n: int, prometheus: psutil.Process) -> tuple[list[float], float, float, object]:
    """Wall times of ``n`` calls, and per call: our CPU, Prometheus's CPU
    (less its scraping rate, measured over the 3 s before)."""
    c0, w0 = cpu_s(prometheus), time.perf_counter()
    await asyncio.sleep(3.0)
    idle_rate = (cpu_s(prometheus) - c0) / (time.perf_counter() - w0)
    times, result = [], None
    ours, theirs, w0 = time.process_time(), cpu_s(prometheus), time.perf_counter()
    for _ in range(n):
        t0 = time.perf_counter()
        result = await fn()
        times.append(time.perf_counter() - t0)
    elapsed = time.perf_counter() - w0
    ours = (time.process_time() - ours) / n
    theirs = max(0.0, cpu_s(prometheus) - theirs - idle_rate * elapsed) / n
    return times, ours, theirs, result


async def bench(server: PrometheusServer, repeat: int) -> list[tuple[str, str, str]]:
    rows = []
    rss0 = rss_mib()
    prometheus = psutil.Process(server.procs[-1].pid)
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as raw:
        async def raw_query():
            r = await raw.get("/api/v1/query", params={"query": promql.GPU_QUERY})
            return len(r.content)

        t_raw, size = await _median(raw_query, repeat)
    rows.append(("raw /api/v1/query of the GPU series (baseline)", f"{t_raw * 1000:.0f}",
                 f"{size / 2**20:.1f} MiB of JSON"))
    async with PrometheusClient(server.url, timeout=30) as client:
        t_read, snap = await _median(client.read_fleet, repeat)
    rows.append(("fleet read (7 queries, decoded)", f"{t_read * 1000:.0f}",
                 f"{len(snap.samples)} samples"))
    session = Session(name="bench")
    source = FleetSource(session, server.url)
    times, ours, theirs, summary = await _timed(source.refresh, repeat, prometheus)
    await source.client.close()
    t_refresh = statistics.median(times)
    rows.append(("fleet refresh (read + medians/MAD + ranked outliers), median / max",
                 f"{t_refresh * 1000:.0f} / {max(times) * 1000:.0f}",
                 f"{summary.hosts} hosts, {summary.gpus} GPUs, {len(summary.outliers)} outliers;"
                 " target <= 1000 ms"))
    rows.append(("  CPU per refresh: perftriage / Prometheus", f"{ours * 1000:.0f} / "
                 f"{theirs * 1000:.0f}", "what a refresh costs whatever the load"))
    try:
        from tests.bench.fleet_view_timing import render_ms  # the Fleet view, once it exists
    except ImportError:
        render_ms = None
    if render_ms is not None:
        ms = await render_ms(source.snapshot, summary, repeat)
        rows.append(("Fleet view render of one refresh", f"{ms:.0f}",
                     f"refresh + render = {t_refresh * 1000 + ms:.0f} ms; target <= 1000 ms"))
    rows.append(("RSS (MiB) before / after", f"{rss0:.0f} / {rss_mib():.0f}", ""))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", type=int, default=512)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_fleet_") as tmp:
        server = PrometheusServer(Path(tmp), hosts=args.hosts, gpus=args.gpus, interval="5s",
                                  outliers=["node117:3:DCGM_FI_PROF_DRAM_ACTIVE=0.31"])
        t0 = time.perf_counter()
        try:
            server.start().wait_ready(timeout=180)
            ready = time.perf_counter() - t0
            rows = asyncio.run(bench(server, args.repeat))
        finally:
            server.stop()
    print_table(f"fleet: {args.hosts} hosts x {args.gpus} GPUs in a real Prometheus "
                f"({2 * args.hosts} targets, ready in {ready:.1f} s); medians of {args.repeat}",
                "ms", rows)


if __name__ == "__main__":
    main()
