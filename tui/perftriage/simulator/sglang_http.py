"""The SIMULATED SGLang server's HTTP API on 127.0.0.1: ``/metrics`` and the
profiling contract (no GPU, no model, no profiler).

- ``GET /metrics``: the Prometheus page of :class:`SimulatedSglangMetrics`;
- ``GET /get_server_info``: a JSON object of server_args fields (``tp_size``,
  ``pp_size``, ``dp_size``, ``model_path``, ...), as SGLang answers it;
- ``GET /get_model_info``: ``model_path``, ``tokenizer_path``,
  ``is_generation``, ... as SGLang answers it. ``model_path`` is a SIMULATED
  checkpoint directory holding only ``model.safetensors.index.json``, whose
  ``metadata.total_size`` is the bytes a step of the simulated model must
  move (:func:`checkpoint`), so the gap form (``G``) fills itself in;
- ``POST /start_profile`` with SGLang's JSON body (``output_dir``,
  ``num_steps``, ``activities``, ``profile_prefix``, ...): with ``num_steps``
  it answers ``Start profiling.`` once those (simulated) steps ran and the
  rank files are written, as SGLang does; without, it arms the profiler and
  ``POST /stop_profile`` writes them;
- ``GET /simulated/gpus`` (a scenario's server only): what its SIMULATED
  GPUs read now (``nvml_sim``: the demo's NVML reads them);
- ``GET /simulated/cpu``: what its SIMULATED host's PSI and cgroup CFS
  counters read now, counted from the server's start (``cpu_sim``: the
  demo's host sampler reads them; no contention without a scenario);
- anything else: 404.

THE TRACES ARE NOT A PROFILE OF THIS SERVER: without a scenario each rank
file is a copy of a real torch.profiler trace bundled in
``simulator/traces/`` (a tiny decode loop captured on one H200; rank r gets
``eager-TP-{r % 2}``); with one (``perftriage demo --scenario NAME``) each
is SIMULATED from the scenario's state (``trace_synth``: CUDA graphs or
eager launches, read backs, the MoE backend's kernel, the all-reduces, a
late rank). Either is written under SGLang's rank file name
``[prefix-]{profile_id}-TP-{r}.trace.json.gz``, so ``perftriage demo``'s
Profile view (``P``, ``c``) has kernels to show without a GPU. Each file is
written under a temporary name and renamed, so a reader never sees half of
one.
"""

from __future__ import annotations

import json
import os
import random
import re
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

TRACES = Path(__file__).with_name("traces")
RANK_TRACES = ("eager-TP-0.trace.json.gz", "eager-TP-1.trace.json.gz")  # real H200 captures
STEP_S = 0.1  # simulated time of one forward step while profiling
MAX_STEPS = 1000  # a longer num_steps is refused (the simulator holds a thread meanwhile)
MAX_BODY = 64 * 1024


class ProfileError(Exception):
    """A request SGLang would refuse (answered 400 with this text)."""


class SimulatedProfiler:
    """SGLang's torch profiler, simulated: copies real traces into output_dir."""

    def __init__(self, tp: int, scenario=None, backend: str | None = None) -> None:
        self.tp = tp
        self.scenario = scenario  # a planted cause: its traces are synthesised from it
        self.backend = backend or "flashinfer_cutlass"
        self.lock = threading.Lock()
        self.armed: dict | None = None  # the running profile's request, if any

    def start(self, body: dict) -> str:
        directory = body.get("output_dir")
        if not isinstance(directory, str) or not os.path.isabs(directory) \
                or not os.path.isdir(directory):
            raise ProfileError("output_dir must be an existing absolute directory (simulator)")
        steps = body.get("num_steps")
        if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool)
                                  or not 1 <= steps <= MAX_STEPS):
            raise ProfileError(f"num_steps must be a whole number 1..{MAX_STEPS} (simulator)")
        with self.lock:
            if self.armed is not None:
                raise ProfileError("Profiling is already in progress. Call /stop_profile first.")
            self.armed = {**body, "profile_id": str(time.time())}
        if steps:
            time.sleep(steps * STEP_S)  # SGLang answers once the steps ran
            self.stop()
        return "Start profiling.\n"

    def stop(self) -> str:
        with self.lock:
            req, self.armed = self.armed, None
        if req is None:
            raise ProfileError("Profiling is not in progress. Call /start_profile first.")
        self.write(req)
        return "Stop profiling. This will take some time.\n"

    def write(self, req: dict) -> list[Path]:
        activities = req.get("activities") or ["CPU", "GPU"]
        if not {"CPU", "GPU"} & set(activities):
            return []  # MEM / CUDA_PROFILER alone: no Chrome trace
        prefix = req.get("profile_prefix")
        stem = (f"{prefix}-" if prefix else "") + req["profile_id"]
        if self.scenario is not None:
            from perftriage.simulator.trace_synth import write

            steps = req.get("num_steps") or 6
            return write(self.scenario.trace(self.backend, self.tp, steps), req["output_dir"],
                         stem)
        out = []
        for rank in range(self.tp):
            target = Path(req["output_dir"]) / f"{stem}-TP-{rank}.trace.json.gz"
            part = target.with_name(target.name + ".part")
            part.write_bytes((TRACES / RANK_TRACES[rank % len(RANK_TRACES)]).read_bytes())
            os.replace(part, target)
            out.append(target)
        return out


def checkpoint(model: str) -> Path:
    """The SIMULATED checkpoint directory of ``model`` (under the temp dir):
    only a ``model.safetensors.index.json`` whose ``metadata.total_size`` is
    the bytes a step must move (the scenarios' ``BYTES_PER_STEP_GB``: the
    active weights, not a real checkpoint's total). Written atomically."""
    from perftriage.simulator.scenarios import BYTES_PER_STEP_GB

    name = re.sub(r"[^A-Za-z0-9._-]", "_", model).strip(".") or "model"
    out = Path(tempfile.gettempdir()) / "perftriage-simulated-models" / name
    out.mkdir(parents=True, exist_ok=True)
    index = out / "model.safetensors.index.json"
    part = index.with_name(f"{index.name}.{os.getpid()}.part")
    part.write_text(json.dumps({"metadata": {"total_size": int(BYTES_PER_STEP_GB * 1e9)},
                                "weight_map": {}}), encoding="utf-8")
    os.replace(part, index)
    return out


def server_info(model: str, tp: int, port: int, extra: dict | None = None,
                model_path: str | None = None) -> dict:
    """What SGLang's ``/get_server_info`` holds that a client reads (server_args fields)."""
    return {"model_path": model_path or model, "served_model_name": model, "tp_size": tp,
            "pp_size": 1, "dp_size": 1, "ep_size": 1,
            "host": "127.0.0.1", "port": port, "version": "0.5.23 (simulated)",
            **(extra or {})}


def model_info(model_path: str) -> dict:
    """What SGLang's ``/get_model_info`` answers."""
    return {"model_path": model_path, "tokenizer_path": model_path, "is_generation": True,
            "preferred_sampling_params": None, "weight_version": "default"}


def make_handler(metrics, profiler: SimulatedProfiler, info: dict):
    rng = random.Random()
    started = time.monotonic()  # the SIMULATED cgroup's counters count from here

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, body: bytes, ctype: str = "text/plain; charset=utf-8"):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(metrics.registry), CONTENT_TYPE_LATEST)
            elif path == "/get_server_info":
                self._send(200, json.dumps(info).encode(), "application/json")
            elif path == "/get_model_info":
                self._send(200, json.dumps(model_info(info["model_path"])).encode(),
                           "application/json")
            elif path == "/simulated/gpus" and profiler.scenario is not None:
                from perftriage.simulator.nvml_sim import gpu_readings

                doc = gpu_readings(profiler.scenario, profiler.backend, profiler.tp, rng)
                self._send(200, json.dumps(doc).encode(), "application/json")
            elif path == "/simulated/cpu":  # no scenario: no contention (healthy's)
                from perftriage.simulator.cpu_sim import cpu_readings
                from perftriage.simulator.scenarios import SCENARIOS

                doc = cpu_readings(profiler.scenario or SCENARIOS["healthy"],
                                   time.monotonic() - started, rng)
                self._send(200, json.dumps(doc).encode(), "application/json")
            else:
                self._send(404, b'{"detail":"Not Found"}', "application/json")

        def do_POST(self) -> None:  # noqa: N802
            path = self.path.split("?", 1)[0]
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 <= length <= MAX_BODY:
                self._send(413, b"request body too large (simulator)\n")
                return
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw.strip() else {}
                if not isinstance(body, dict):
                    raise ProfileError("the body is not a JSON object")
                if path == "/start_profile":
                    self._send(200, profiler.start(body).encode())
                elif path == "/stop_profile":
                    self._send(200, profiler.stop().encode())
                else:
                    self._send(404, b'{"detail":"Not Found"}', "application/json")
            except (ProfileError, ValueError) as exc:
                self._send(400, f"{exc}\n".encode())

        def log_message(self, format: str, *args) -> None:  # noqa: A002
            pass  # the simulator's log is SGLang's, not http.server's

    return Handler


def serve(metrics, port: int, tp: int, model: str, host: str = "127.0.0.1",
          extra_info: dict | None = None, scenario=None,
          backend: str | None = None) -> ThreadingHTTPServer:
    """Serve the simulated API on ``host:port`` from a daemon thread."""
    extra = dict(extra_info or {})
    if scenario is not None:
        extra.update(simulated_scenario=scenario.name, moe_runner_backend=backend,
                     disable_cuda_graph=not scenario.cuda_graph,
                     disable_custom_all_reduce=scenario.comm == "nccl",
                     max_running_requests=scenario.max_running,
                     max_total_num_tokens=scenario.kv_tokens)
    handler = make_handler(metrics, SimulatedProfiler(tp, scenario, backend),
                           server_info(model, tp, port, extra, str(checkpoint(model))))
    httpd = ThreadingHTTPServer((host, port), handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True,
                     name="simulated-sglang-http").start()
    return httpd
