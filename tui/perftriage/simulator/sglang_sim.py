"""A SIMULATOR of an SGLang 0.5.23 server's log and /metrics (no GPU, no model).

    python -m perftriage.simulator.sglang_sim --log FILE --rate 20 [--metrics-port N]

Writes SGLang's startup lines in its exact format (server_args, weight
loading, KV cache, CUDA graph capture, uvicorn, "The server is fired up and
ready to roll!"), then ``Decode batch`` / ``Prefill batch`` lines at
``--rate`` lines per second under a steady load (a constant arrival rate,
small noise), and now and then a
warning (``KV cache pool is full. Retract requests.``) or an error line. Without
``--log`` it writes to stdout. ``--fail`` makes the start fail with a CUDA
OOM traceback (exit status 1); ``--lines N`` stops after N steady-state lines;
``--rate 0`` writes as fast as it can (benchmarks). With ``--metrics-port N``
it also serves SGLang's Prometheus ``/metrics`` on 127.0.0.1:N (SGLang's
metric names, through prometheus_client; see ``sglang_metrics``) from the
moment the simulated uvicorn starts, with figures that follow the log lines,
and on the same port SGLang's profiling contract (``/get_server_info``,
``/start_profile``, ``/stop_profile``; see ``sglang_http``: the rank files it
writes are copies of a real bundled trace, not a profile of this simulator).
``--spec-accept-len X`` writes speculative decoding's ``accept len`` /
``accept rate`` parts, ``--mfu-metrics`` the ``--enable-mfu-metrics`` estimates
(``est. read BW (GB/s per GPU)``, also served as
``sglang:estimated_read_bytes_per_gpu_total``), ``--dp N`` rank tags
``DPk TPk`` for N data-parallel schedulers taking turns, ``--moe-runner-backend
NAME`` the MoE backend in ``server_args`` and its made-up speed
(:data:`BACKEND_SPEEDUP`: the demo's ``S`` restarts it with another backend,
and the baseline ``b`` shows the difference). ``--floor-ms MS`` (with a
scenario) sets the decode step's memory-bandwidth floor: a real GPU's, when
the simulator runs beside one (the H200 walk), so the step is the scenario's
gap times the floor the gap form computes there. Values are made up.
Each pass of the loop spends a little CPU in ``simulated_host_stall`` (under
``simulated_scheduler_pass``): the real Python frames ``perftriage probe
stacks`` shows on the demo (its default finds ``sglang_sim`` like an SGLang
scheduler).
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import time
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from perftriage.simulator.scenarios import Launch, Scenario

READY = "The server is fired up and ready to roll!"
# decode speed of a simulated MoE runner backend, relative to the seed case's
# slow path (made up: 3.3x for the fused CuTe DSL kernels, as in the README's case)
BACKEND_SPEEDUP = {"flashinfer_cutlass": 1.0, "triton": 0.9, "flashinfer_cutedsl": 3.3,
                   "deep_gemm": 2.0}
DEFAULT_BACKEND = "flashinfer_cutlass"


def stamp(tag: str = "TP0") -> str:
    now = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    return f"[{now} {tag}]" if tag else f"[{now}]"


def startup_lines(tp: int = 8, port: int = 30000, model: str = "zai-org/GLM-5-NVFP4",
                  backend: str = DEFAULT_BACKEND, cuda_graph: bool = True,
                  custom_all_reduce: bool = True, mem_fraction: float = 0.85,
                  max_running: int = 64, kv_tokens: int = 412160,
                  graph_max_bs: int = 64) -> list[tuple[float, str]]:
    """(delay before the line in seconds at --startup-s 1.0, line); without
    CUDA graphs (``--disable-cuda-graph``) no capture lines, and server_args
    say ``disable_cuda_graph`` / ``disable_custom_all_reduce`` when set, and
    the launch's KV pool, running cap and memory fraction."""
    flags = ("" if cuda_graph else "'disable_cuda_graph': True, ") + (
        "" if custom_all_reduce else "'disable_custom_all_reduce': True, ")
    sizes = [bs for bs in (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 96, 128, 160, 192, 256)
             if bs <= graph_max_bs]
    lines = [
        (0.0, f"{stamp('')} server_args={{'model_path': '{model}', 'tp_size': {tp}, 'ep_size': 1, "
              f"'quantization': 'modelopt_fp4', 'moe_runner_backend': '{backend}', "
              f"'moe_a2a_backend': 'none', 'mem_fraction_static': {mem_fraction:g}, "
              f"'max_running_requests': {max_running}, 'cuda_graph_max_bs': {graph_max_bs}, "
              f"{flags}'host': '127.0.0.1', 'port': {port}}}"),
        (0.1, f"{stamp()} Load weight begin. avail mem=93.12 GB"),
        (0.3, f"{stamp()} Load weight end. elapsed=158.02 s, type=GlmMoeForCausalLM, "
              "quant=modelopt_fp4, avail mem=52.37 GB, mem usage=40.75 GB."),
        (0.1, f"{stamp()} KV Cache is allocated. dtype: torch.bfloat16, #tokens: {kv_tokens}, "
              "K size: 18.86 GB, V size: 18.86 GB"),
        (0.0, f"{stamp()} Memory pool end. avail mem=13.98 GB"),
        (0.1, f"{stamp()} Capture target decode CUDA graph begin. backend=full, "
              "num_tokens_per_req=1, avail mem=13.71 GB"),
        (0.2, f"{stamp()} Capture target decode CUDA graph end. bs={sizes}, elapsed=42.11 s, "
              "mem usage=1.03 GB, avail mem=12.68 GB"),
        (0.0, f"{stamp()} max_total_num_tokens={kv_tokens}, chunked_prefill_size=8192, "
              f"max_prefill_tokens=16384, max_running_requests={max_running}, "
              "context_len=202752, available_gpu_mem=12.68 GB"),
        (0.1, f"{stamp('')} INFO:     Started server process [{20431}]"),
        (0.0, f"{stamp('')} INFO:     Waiting for application startup."),
        (0.0, f"{stamp('')} INFO:     Application startup complete."),
        (0.0, f"{stamp('')} INFO:     Uvicorn running on http://127.0.0.1:{port} (Press CTRL+C to quit)"),
        (0.05, f"{stamp('')} INFO:     127.0.0.1:51234 - \"GET /model_info HTTP/1.1\" 200 OK"),
        (0.0, f"{stamp()} Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, #token: 0, "
              "token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, "
              "cuda graph: False, input throughput (token/s): 0.00"),
        (0.05, f"{stamp('')} INFO:     127.0.0.1:51240 - \"POST /generate HTTP/1.1\" 200 OK"),
        (0.0, f"{stamp('')} {READY}"),
    ]
    if not cuda_graph:
        lines = [x for x in lines if "CUDA graph" not in x[1]]
    return lines


FAIL_LINES = [
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3/dist-packages/sglang/srt/model_executor/model_runner.py", line 512, in load_model',
    "    self.model = get_model(model_config=self.model_config, load_config=self.load_config)",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 139.80 GiB of which 1.12 GiB is free.",
]


STEADY_RUNNING = 48  # requests in the decode batch at the simulated arrival rate
MAX_RUNNING = 64  # max_running_requests in the startup lines
MAX_TOTAL_TOKENS = 412160  # max_total_num_tokens in the startup lines


class Steady:
    """Decode/prefill lines of a server under a steady load (small noise)."""

    def __init__(self, seed: int | None = None, error_every: int = 400, metrics=None,
                 step_s: float = 0.1, spec_accept_len: float | None = None,
                 mfu: bool = False, dp: int = 1, speedup: float = 1.0,
                 scenario: "Scenario | None" = None, backend: str = DEFAULT_BACKEND) -> None:
        self.rng = random.Random(seed)
        self.n = 0
        self.error_every = error_every
        self.metrics = metrics  # SimulatedSglangMetrics fed with the same figures, or None
        self.step_s = step_s  # simulated time between two lines
        self.spec_accept_len = spec_accept_len  # tokens per step with speculation, or None
        self.mfu = mfu  # append the --enable-mfu-metrics estimates to decode lines
        self.dp = max(1, dp)  # data-parallel schedulers, each logging with a DPk tag
        self.speedup = speedup  # the MoE backend's decode speed (BACKEND_SPEEDUP)
        # a planted cause (perftriage demo --scenario): the load, the rate, the KV cache
        # and the retractions follow it, and no periodic error line is written
        self.scenario = scenario
        self.backend = backend
        if scenario is not None:
            self.error_every = 0
        self.retract_every = (max(1, round(scenario.retract_every_s / self.step_s))
                              if scenario is not None and scenario.retract_every_s else 0)

    def _tag(self) -> str:
        if self.dp == 1:
            return "TP0"
        k = self.n % self.dp
        return f"DP{k} TP{k}"

    def line(self) -> str:
        self.n += 1
        r = self.rng
        running, waiting = self._load()
        if self.retract_every and self.n % self.retract_every == 0:
            return self._retract()
        if self.error_every and self.n % self.error_every == 0:
            if self.n // self.error_every % 2:
                return self._retract()
            # an error the server survives (a made-up request failure)
            return (f"{stamp()} ValueError: request {r.randrange(16**8):08x} failed: "
                    "input length exceeds the maximum allowed length (simulated)")
        usage = self._usage(running)
        if self.n % 10 == 0:
            queued = waiting
            new_tok = r.randint(200, 13000)
            new_seq = r.randint(1, 16)
            if self.metrics is not None:
                self.metrics.prefill(running, queued, usage, new_tok, new_seq)
            # metrics_reporter.py:753-783 (0.5.23): no "#token:" in the prefill line
            return (f"{stamp(self._tag())} Prefill batch, #new-seq: {new_seq}, "
                    f"#new-token: {new_tok}, #cached-token: 0, token usage: {usage:.2f}, "
                    f"#running-req: {running}, #queue-req: {queued}, #pending-token: {queued * 800}, "
                    f"cuda graph: False, input throughput (token/s): {r.uniform(300, 6000):.2f}")
        # the KV cache holds the running requests' contexts: bounded, as the pool is
        tokens = round(usage * (self.scenario.kv_tokens if self.scenario else MAX_TOTAL_TOKENS))
        if self.scenario is not None:  # retracted requests' decode work is done again
            gen = (running * self.scenario.request_tps(self.backend) * r.uniform(0.98, 1.02)
                   * (1.0 - self.scenario.waste))
        else:
            gen = running * (6.3 + r.uniform(-0.4, 0.4)) * self.speedup
        spec = ""
        if self.spec_accept_len:  # metrics_reporter.py:1005
            gen *= self.spec_accept_len
            rate = (self.spec_accept_len - 1) / 3
            spec = f"accept len: {self.spec_accept_len:.2f}, accept rate: {rate:.2f}, "
        if self.metrics is not None:
            self.metrics.decode(running, waiting, usage, gen, self.step_s,
                                read_gbs=self._read_gbs(running) if self.mfu else None,
                                spec_accept_len=self.spec_accept_len)
        graph = self.scenario.cuda_graph if self.scenario is not None else True
        line = (f"{stamp(self._tag())} Decode batch, #running-req: {running}, "
                f"#token: {tokens}, token usage: {usage:.2f}, {spec}cuda graph: {graph}, "
                f"gen throughput (token/s): {gen:.2f}, #queue-req: {waiting}")
        if self.mfu:  # metrics_reporter.py:1052-1056
            line += (f", est. decode TFLOPS/s (per GPU): {running * 0.9:.2f}, "
                     f"est. read BW (GB/s per GPU): {self._read_gbs(running):.2f}, "
                     f"est. write BW (GB/s per GPU): {running * 0.4:.2f}")
        return line

    def _retract(self) -> str:
        """A warning (managers/scheduler.py:4526)."""
        r = self.rng
        return (f"{stamp()} KV cache pool is full. Retract requests. #retracted_reqs: "
                f"{r.randint(1, 4)}, #new_tokens_gained: {r.randint(500, 4000)}, "
                "#new_token_ratio: 0.5000 -> 0.8000")

    def _usage(self, running: int) -> float:
        """Token usage: the running requests' contexts over the pool."""
        if self.scenario is None:
            return running / 400
        return self.scenario.token_usage(running)

    def _load(self) -> tuple[int, int]:
        """(running, queued) requests: a steady load, as from a benchmark client
        at a constant arrival rate, with small noise (a few requests either way),
        so that a before/after on the demo compares like with like; no phases
        for ``compare`` to warn about."""
        sc = self.scenario
        if sc is not None:
            running = min(sc.max_running, max(1, round(self.rng.gauss(sc.running, 0.5))))
            queued = max(1, round(self.rng.gauss(sc.queued, 1.0))) if sc.queued else 0
            return running, queued
        running = min(MAX_RUNNING, max(1, round(self.rng.gauss(STEADY_RUNNING, 1.5))))
        return running, max(0, round(self.rng.gauss(1.0, 1.0)))

    @staticmethod
    def _read_gbs(running: int) -> float:
        """A made-up engine estimate: weights once a step plus KV per request."""
        return 2400.0 + 12.0 * running


# The simulated scheduler holds the CPU this long each pass (busy, not asleep):
# a host stall that `perftriage probe stacks` finds by name in the demo, as it
# would find a real scheduler's (about 3 % of a core at 10 passes a second).
HOST_STALL_S = 0.003


def simulated_host_stall(seconds: float = HOST_STALL_S) -> None:
    """Burn ``seconds`` of CPU like a scheduler pass that runs Python work."""
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


def simulated_scheduler_pass(sim: "Steady", due: int) -> str:
    """One scheduler pass: its host work, then the ``due`` log lines."""
    simulated_host_stall()
    return "\n".join(sim.line() for _ in range(due)) + "\n"


# --- a scenario's scheduler loop (perftriage demo --scenario NAME) ---------------
# Each pass of PASS_S the host really burns the scenario's shares of wall time in
# named Python frames, so that py-spy (perftriage probe stacks) samples them at
# those shares: a planted stall outside the forward pass, eager launch work in
# ``forward``, a read back spinning in ``item`` (cudaStreamSynchronize spins).
PASS_S = 0.05


def _burn(seconds: float) -> None:
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


def simulated_late_rank_stall(seconds: float) -> None:
    """The straggler scenario's stall: TP rank 3's scheduler, late every step."""
    _burn(seconds)


def item(seconds: float) -> None:
    """A value read back (``float(t)`` -> ``.item()``): the host spins in the sync."""
    _burn(seconds)


def forward(seconds: float, syncs: int) -> None:
    """The eager forward pass: the host launching kernels one by one (and
    reading ``syncs`` values back on the way)."""
    reads = seconds * 0.3 if syncs else 0.0
    _burn(seconds - reads)
    for _ in range(syncs):
        item(reads / syncs)


def process_batch_result_decode(seconds: float) -> None:
    """SGLang's scheduler turning a decode batch's results into tokens and
    replies (``SchedulerOutputProcessorMixin``): ordinary work, no planted
    stall. In the cpu-throttle scenario it takes this long because its
    cgroup waits for a CPU (a throttled thread is runnable, so py-spy counts
    the wait as time in this frame)."""
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


def event_loop_normal(seconds: float) -> None:
    """SGLang's scheduler loop (``Scheduler.event_loop_normal``)."""
    process_batch_result_decode(seconds)


# Every scenario's scheduler also polls for new requests each pass, as SGLang's
# does (``Scheduler.recv_requests``: non-blocking reads of its ZMQ sockets), a
# small share of wall time that is the host waiting, not stalling: a stacks
# record of a healthy server then has samples to share out (without it the
# demo's 3 s record held 0 to 2 busy samples, "too few to say anything")
RECV_SHARE = 0.1


def recv_requests(seconds: float) -> None:
    """The scheduler's poll for new requests (SGLang's ``Scheduler.recv_requests``).
    Its loop is its own, not ``_burn``'s: py-spy names the leaf frame."""
    end = time.perf_counter() + seconds
    polls = 0
    while time.perf_counter() < end:
        polls += 1  # a zmq recv_pyobj(NOBLOCK) that found nothing


# a scenario's stall_frame (the leaf py-spy shows) -> the call that spends the time in it
STALLS = {"simulated_host_stall": simulated_host_stall,
          "simulated_late_rank_stall": simulated_late_rank_stall,
          "process_batch_result_decode": event_loop_normal}


def scenario_pass(sim: "Steady", due: int, sc: "Scenario") -> str:
    """One pass of a scenario's scheduler: its planted host work at its share
    of the pass, then the ``due`` log lines."""
    recv_requests(RECV_SHARE * PASS_S)
    if sc.stall_share:
        STALLS.get(sc.stall_frame, simulated_host_stall)(sc.stall_share * PASS_S)
    if sc.forward_share:
        forward(sc.forward_share * PASS_S, sc.syncs_per_step)
    return "\n".join(sim.line() for _ in range(due)) + "\n" if due > 0 else ""


def _scenario_loop(sim: "Steady", sc: "Scenario", out, rate: float, lines: int) -> int:
    """Passes of PASS_S on a fixed schedule (the planted work keeps its share of
    wall time however late a pass wakes), the log lines due at ``rate``."""
    n = 0
    t0 = time.monotonic()
    k = 0
    while not lines or n < lines:
        due = int((time.monotonic() - t0) * rate) + 1 - n
        if lines:
            due = min(due, lines - n)
        text = scenario_pass(sim, due, sc)
        if text:
            out.write(text)
            out.flush()
            n += max(due, 0)
        k += 1
        time.sleep(max(0.0, t0 + k * PASS_S - time.monotonic()))
    out.flush()
    return 0


def launch_of(args: argparse.Namespace) -> "Launch":
    """The flags a scenario's state follows (``Scenario.launched``)."""
    from perftriage.simulator.scenarios import Launch

    return Launch(cuda_graph=not args.disable_cuda_graph,
                  custom_all_reduce=not args.disable_custom_all_reduce,
                  max_running=max(1, args.max_running_requests),
                  mem_fraction=args.mem_fraction_static,
                  kv_fp8=args.kv_cache_dtype.startswith("fp8"),
                  cuda_graph_max_bs=args.cuda_graph_max_bs, simulated_fix=args.simulated_fix)


class _Terminated(Exception):
    """SIGTERM: shut down the way a server does, with a last log line."""


def _on_sigterm(signum, frame) -> None:
    raise _Terminated


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m perftriage.simulator.sglang_sim",
                                 description="SIMULATED SGLang 0.5.23 server log (no GPU).")
    ap.add_argument("--log", help="append to this file (default: stdout)")
    ap.add_argument("--rate", type=float, default=10.0,
                    help="steady-state lines per second (0 = as fast as possible)")
    ap.add_argument("--startup-s", type=float, default=1.0, help="scale of the startup delays")
    ap.add_argument("--lines", type=int, default=0, help="stop after N steady lines (0 = never)")
    ap.add_argument("--error-every", type=int, default=400, help="an error line every N lines")
    ap.add_argument("--fail", action="store_true", help="fail the start with a CUDA OOM")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--metrics-port", type=int, default=None,
                    help="also serve SGLang's /metrics on 127.0.0.1:PORT")
    ap.add_argument("--spec-accept-len", type=float, default=None,
                    help="write speculative decoding's accept len (tokens per step)")
    ap.add_argument("--mfu-metrics", action="store_true",
                    help="write --enable-mfu-metrics' estimates (est. read BW ...)")
    ap.add_argument("--dp", type=int, default=1, help="data-parallel schedulers (DPk tags)")
    ap.add_argument("--tp", type=int, default=8, help="tensor-parallel size in server_args")
    ap.add_argument("--scenario", default=None,
                    help="plant one cause (perftriage.simulator.scenarios): healthy, host-stall, "
                         "launch-bound, ...")
    # SGLang's flags that the triage's fix lines name: a scenario's planted cause follows them
    ap.add_argument("--disable-cuda-graph", action="store_true")
    ap.add_argument("--disable-custom-all-reduce", action="store_true")
    ap.add_argument("--max-running-requests", type=int, default=MAX_RUNNING)
    ap.add_argument("--mem-fraction-static", type=float, default=0.85)
    ap.add_argument("--kv-cache-dtype", default="auto",
                    choices=["auto", "bf16", "fp8_e4m3", "fp8_e5m2"])
    ap.add_argument("--cuda-graph-max-bs", type=int, default=MAX_RUNNING)
    ap.add_argument("--simulated-fix", default=None, metavar="CAUSE",
                    help="the code change a scenario's fix line describes, SIMULATED "
                         "(host-stall, host-sync, straggler, wasted-traffic, gpu-throttle, "
                         "cpu-throttle)")
    ap.add_argument("--floor-ms", type=float, default=None, metavar="MS",
                    help="with --scenario: the decode step's memory-bandwidth floor in ms "
                         "(default: the simulated GPUs' FLOOR_MS); the step is the "
                         "scenario's gap times it")
    ap.add_argument("--moe-runner-backend", default=DEFAULT_BACKEND,
                    choices=sorted(BACKEND_SPEEDUP),
                    help="the MoE backend in server_args; decode speed follows it (made up)")
    args = ap.parse_args(argv)
    scenario = None
    if args.scenario is not None:
        from perftriage.simulator.scenarios import SCENARIOS

        if args.scenario not in SCENARIOS:
            ap.error(f"--scenario: one of {', '.join(SCENARIOS)}, not {args.scenario!r}")
        scenario = SCENARIOS[args.scenario]
        if args.floor_ms is not None:
            if not 0.0 < args.floor_ms < float("inf"):
                ap.error(f"--floor-ms: a positive number of ms, not {args.floor_ms!r}")
            scenario = replace(scenario, floor_ms=args.floor_ms)
        scenario = scenario.launched(launch_of(args))
    elif args.floor_ms is not None:
        ap.error("--floor-ms needs --scenario (without one the rate is not a step's)")
    metrics = None
    if args.metrics_port is not None:
        from perftriage.simulator.sglang_metrics import SimulatedSglangMetrics

        metrics = SimulatedSglangMetrics("zai-org/GLM-5-NVFP4", tp=args.tp, seed=args.seed)
    out = open(args.log, "a", encoding="utf-8", buffering=1) if args.log else sys.stdout  # noqa: SIM115
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        for i, (delay, text) in enumerate(startup_lines(
                tp=args.tp, backend=args.moe_runner_backend,
                cuda_graph=not args.disable_cuda_graph if scenario is None
                or scenario.running > args.cuda_graph_max_bs else scenario.cuda_graph,
                custom_all_reduce=not args.disable_custom_all_reduce if scenario is None
                else scenario.comm != "nccl",
                mem_fraction=args.mem_fraction_static, max_running=args.max_running_requests,
                kv_tokens=scenario.kv_tokens if scenario is not None else MAX_TOTAL_TOKENS,
                graph_max_bs=args.cuda_graph_max_bs)):
            time.sleep(delay * args.startup_s)
            if args.fail and i == 2:
                for ln in FAIL_LINES:
                    out.write(ln + "\n")
                out.flush()
                return 1
            if metrics is not None and "Uvicorn running" in text:
                try:
                    metrics.serve(args.metrics_port, scenario=scenario,
                                  backend=args.moe_runner_backend)
                except OSError as exc:
                    out.write(f"{stamp('')} ERROR:    [Errno {exc.errno}] cannot serve /metrics on "
                              f"127.0.0.1:{args.metrics_port}: {exc.strerror}\n")
                    out.flush()
                    return 1
            out.write(text + "\n")
            out.flush()
        sim = Steady(args.seed, args.error_every, metrics,
                     step_s=1.0 / args.rate if args.rate > 0 else 0.01,
                     spec_accept_len=args.spec_accept_len, mfu=args.mfu_metrics, dp=args.dp,
                     speedup=BACKEND_SPEEDUP[args.moe_runner_backend], scenario=scenario,
                     backend=args.moe_runner_backend)
        n = 0
        t0 = time.monotonic()
        if scenario is not None and args.rate > 0:
            return _scenario_loop(sim, scenario, out, args.rate, args.lines)
        while not args.lines or n < args.lines:
            if args.rate <= 0:
                chunk = 4096 if not args.lines else min(4096, args.lines - n)
                out.write("\n".join(sim.line() for _ in range(chunk)) + "\n")
                n += chunk
                continue
            due = int((time.monotonic() - t0) * args.rate) + 1 - n
            if due > 0:
                if args.lines:
                    due = min(due, args.lines - n)
                out.write(simulated_scheduler_pass(sim, due))
                out.flush()
                n += due
            time.sleep(min(0.05, 1.0 / args.rate))
        out.flush()
    except (BrokenPipeError, KeyboardInterrupt):
        return 0
    except _Terminated:
        out.write(f"{stamp()} Received sigterm, shutting down gracefully (simulator).\n")
        out.flush()
        return 0
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
