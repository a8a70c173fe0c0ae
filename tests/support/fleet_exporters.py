"""An EMULATOR of many hosts' dcgm-exporter and SGLang ``/metrics`` (no GPU, no engine).

    python -m tests.support.fleet_exporters --hosts 16 --gpus 8 --port P \
        --outlier node003:3:DCGM_FI_PROF_DRAM_ACTIVE=0.31

One HTTP server on 127.0.0.1 serves every emulated host: ``/dcgm/HOST`` is
what dcgm-exporter on HOST would serve (the six DCGM fields perftriage reads,
with dcgm-exporter's labels: ``gpu``, ``UUID``, ``device``, ``modelName``,
``Hostname``), ``/sglang/HOST`` what SGLang's ``/metrics`` on HOST would
serve (gauges, a counter and a histogram). The text is written by
``prometheus_client``, so it is the real exposition format. Values sit near
a fleet-wide level with a small deterministic spread; ``--outlier`` plants
one odd value (``HOST:GPU:METRIC=VALUE``, GPU empty for an engine metric).
Prometheus scrapes each path as its own target (see tests/support/prometheus.py).
Prints ``ready`` on stdout once it listens.
"""

from __future__ import annotations

import argparse
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

# fleet-wide level and relative spread of each emulated series
DCGM_LEVELS = {
    "DCGM_FI_PROF_DRAM_ACTIVE": 0.56,
    "DCGM_FI_PROF_SM_ACTIVE": 0.71,
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.38,
    "DCGM_FI_DEV_GPU_UTIL": 96.0,
    "DCGM_FI_DEV_FB_USED": 131000.0,
    "DCGM_FI_DEV_POWER_USAGE": 610.0,
}
SGLANG_LEVELS = {
    "sglang:gen_throughput": 1450.0,
    "sglang:num_running_reqs": 48.0,
    "sglang:num_queue_reqs": 4.0,
    "sglang:token_usage": 0.62,
}
SPREAD = 0.03


def host_names(n: int) -> list[str]:
    return [f"node{i:03d}" for i in range(1, n + 1)]


def level(base: float, *key: int) -> float:
    """base ± SPREAD (deterministic, evenly spread, never identical across the fleet)."""
    k = 0
    for part in key:
        k = k * 131 + part
    return base * (1 + SPREAD * (((k * 2654435761) % 1000) / 500.0 - 1))


def parse_outliers(specs: list[str]) -> dict[tuple[str, int | None, str], float]:
    out = {}
    for spec in specs:
        where, value = spec.split("=", 1)
        host, gpu, metric = where.split(":", 2)
        out[(host, int(gpu) if gpu else None, metric)] = float(value)
    return out


def dcgm_registry(host: str, h: int, gpus: int, planted) -> CollectorRegistry:
    reg = CollectorRegistry()
    for m, (name, base) in enumerate(DCGM_LEVELS.items()):
        g = Gauge(name, f"emulated {name}", ["gpu", "UUID", "device", "modelName", "Hostname"],
                  registry=reg)
        for gpu in range(gpus):
            value = planted.get((host, gpu, name), level(base, h, gpu, m))
            g.labels(str(gpu), f"GPU-{h:04x}{gpu:04x}-emulated", f"nvidia{gpu}",
                     "NVIDIA H200", host).set(value)
    return reg


def sglang_registry(host: str, h: int, planted) -> CollectorRegistry:
    reg = CollectorRegistry()
    labels = ["model_name"]
    for m, (name, base) in enumerate(SGLANG_LEVELS.items()):
        g = Gauge(name, "emulated", labels, registry=reg)
        g.labels("zai-org/GLM-5-NVFP4").set(planted.get((host, None, name), level(base, h, m)))
    Counter("sglang:prompt_tokens", "emulated", labels, registry=reg).labels(
        "zai-org/GLM-5-NVFP4").inc(1000 * h)
    Histogram("sglang:time_to_first_token_seconds", "emulated", labels, registry=reg).labels(
        "zai-org/GLM-5-NVFP4").observe(0.2)
    return reg


def build_pages(hosts: int, gpus: int, planted) -> dict[str, bytes]:
    pages = {}
    for h, host in enumerate(host_names(hosts), 1):
        pages[f"/dcgm/{host}"] = generate_latest(dcgm_registry(host, h, gpus, planted))
        pages[f"/sglang/{host}"] = generate_latest(sglang_registry(host, h, planted))
    return pages


def serve(port: int, pages: dict[str, bytes]) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = pages.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", type=int, default=16)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--outlier", action="append", default=[], metavar="HOST:GPU:METRIC=VALUE")
    args = ap.parse_args(argv)
    serve(args.port, build_pages(args.hosts, args.gpus, parse_outliers(args.outlier)))


if __name__ == "__main__":
    sys.exit(main())


def emulated_snapshot(hosts: int, gpus: int, planted):
    """The values the pages hold, as perftriage reads them (for UI snapshots,
    which must not depend on a timed read)."""
    from perftriage.core.fleet.model import FleetSample, FleetSnapshot

    samples = []
    for h, host in enumerate(host_names(hosts), 1):
        for m, (name, base) in enumerate(DCGM_LEVELS.items()):
            samples += [FleetSample(host, g, name, planted.get((host, g, name), level(base, h, g, m)))
                        for g in range(gpus)]
        for m, (name, base) in enumerate(SGLANG_LEVELS.items()):
            samples.append(FleetSample(host, None, name,
                                       planted.get((host, None, name), level(base, h, m))))
    return FleetSnapshot(samples, taken_at=0.0)
