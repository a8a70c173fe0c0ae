"""The demo's scenario library: each one plants one cause in the SIMULATED
SGLang server (``perftriage demo --scenario NAME``), and everything the
server shows is generated from that state — its log lines and ``/metrics``,
the CPU its scheduler loop really burns (what ``perftriage probe stacks``
samples), the traces a profile capture writes (:mod:`trace_synth`) and the
readings of its SIMULATED GPUs (:mod:`nvml_sim`) and of its host's CPU
contention, PSI and the cgroup's CFS counters (:mod:`cpu_sim`).

The numbers are made up but consistent with each other: a decode step is
``gpu_gap`` times its memory-bandwidth floor while its kernels run, and the
GPU idles ``idle`` of the step on top (a stall, launches, read backs), so
the decode rate, the GPU's utilisation, its DRAM traffic and the capture's
timeline all tell the same story. The floor is the one the gap form (``G``)
computes from :data:`GAP_INPUTS` on the simulated GPUs (:data:`FLOOR_MS`), or
a real GPU's (``sglang_sim --floor-ms``: the simulator run beside one, whose
gap form reads that GPU's bandwidth).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from perftriage.core.model.findings import DIAGNOSES
from perftriage.simulator.trace_synth import MOE_KERNELS, TraceSpec, step_kernel_us

# the simulated GPUs: TP8 RTX PRO 6000 Blackwell (512-bit GDDR7: 2 x 14000 MHz x 512 / 8
# = 1792 GB/s each); their name says they are simulated
GPU_NAME = "NVIDIA RTX PRO 6000 Blackwell Server Edition (SIMULATED)"
GPU_COUNT = 8
BUS_WIDTH_BITS = 512
MEM_CLOCK_MAX_MHZ = 14000
SM_CLOCK_MAX_MHZ = 2430
PEAK_GBS = BUS_WIDTH_BITS / 8 * MEM_CLOCK_MAX_MHZ * 2 / 1000.0
# what the gap form (G) is given for the simulated model: 40 B active parameters at FP4
GAP_INPUTS = {"active_params_b": 40.0, "bits": 4.0, "gpus": GPU_COUNT}
BYTES_PER_STEP_GB = GAP_INPUTS["active_params_b"] * GAP_INPUTS["bits"] / 8
FLOOR_MS = BYTES_PER_STEP_GB / (PEAK_GBS * GPU_COUNT) * 1000.0
MAX_TOTAL_TOKENS = 412160  # the startup lines' max_total_num_tokens
MAX_RUNNING = 64
MEM_FRACTION = 0.85  # --mem-fraction-static's value in the startup lines
MEM_OVERHEAD = 0.06  # GPU memory past --mem-fraction-static (graphs, activations, NCCL)
# the MoE kernel's share of the step's kernel time with the default backend (trace_synth)
MOE_SHARE = 0.55
# throttle reason bits (NVML clocksEventReasons)
SW_POWER_CAP, HW_SLOWDOWN, SW_THERMAL = 0x4, 0x8, 0x20


@dataclass(frozen=True)
class Scenario:
    name: str
    plants: str  # what is planted, in one line (the demo's --help and its notice)
    witness: str  # which witness reveals it
    # the witnesses its end-to-end test takes, in order (tests/simulator): "G" (the gap
    # form), "capture", "stacks"; none: the readings alone (log, /metrics, NVML) tell
    takes: tuple[str, ...] = ()
    cuda_graph: bool = True
    gpu_gap: float = 1.2  # the kernels' time over the floor (the default MoE backend)
    idle: float = 0.02  # share of the step the GPU idles (host gaps)
    traffic: float = 1.0  # DRAM bytes moved over the bytes a token needs
    stall_share: float = 0.0  # wall time the scheduler burns in a planted stall
    stall_frame: str = "simulated_host_stall"
    forward_share: float = 0.0  # wall time the host spends launching (eager forward)
    syncs_per_step: int = 0
    comm: str = "custom"
    comm_us: float = 2.0
    late_rank: int | None = None
    late_us: float = 0.0
    running: int = 48
    queued: int = 0
    context_tokens: int = 2600  # mean context of a running request (#token / #running-req)
    retract_every_s: float = 0.0  # a "KV cache pool is full. Retract requests." line
    throttle_mask: int = 0
    clock_ratio: float = 1.0  # SM clock over its max while throttled
    # the SIMULATED host's CPU contention (:mod:`cpu_sim`): PSI cpu "some avg10", %, the
    # share of the engine cgroup's CFS periods it was throttled in, %, and the share of
    # the wall time it was throttled, % (its own cpu.pressure reads about the same)
    cpu_psi: float = 0.0
    cfs_throttled: float = 0.0
    cfs_throttled_time: float = 0.0
    # the server flags that plant it (its first start's extra arguments: S without them
    # drops them) and what S is given to apply the fix line its finding prints
    flags: tuple[str, ...] = ()
    fix: str = ""
    kv_tokens: int = MAX_TOTAL_TOKENS  # the KV pool (max_total_num_tokens) under the launch
    max_running: int = MAX_RUNNING  # --max-running-requests under the launch
    waste: float = 0.0  # the share of decode work redone after retractions
    mem_fraction: float = MEM_FRACTION  # --mem-fraction-static under the launch
    # the decode step's memory-bandwidth floor, ms: the simulated GPUs' (FLOOR_MS), or a
    # real GPU's (sglang_sim --floor-ms), so the step is gap x the floor the gap form computes
    floor_ms: float = FLOOR_MS

    def gpu_mem_pct(self) -> float:
        """NVML's memory used of the total: SGLang takes --mem-fraction-static
        of it for the weights and the KV pool, the CUDA graphs, activations
        and NCCL's buffers take about MEM_OVERHEAD more."""
        return min(99.6, 100.0 * (self.mem_fraction + MEM_OVERHEAD))

    def gap(self, backend: str = "flashinfer_cutlass") -> float:
        """The decode step over its floor: the kernels' time, the MoE backend's
        part of it, slower clocks, and the idle on top."""
        default_us = MOE_KERNELS["flashinfer_cutlass"][1]
        moe = MOE_KERNELS.get(backend, MOE_KERNELS["flashinfer_cutlass"])[1] / default_us
        kernels = self.gpu_gap * (1.0 - MOE_SHARE + MOE_SHARE * moe)
        kernels *= 0.5 + 0.5 / self.clock_ratio  # half the step slows with the SM clock
        return max(1.02, kernels) / (1.0 - self.idle)

    def step_ms(self, backend: str = "flashinfer_cutlass") -> float:
        return self.gap(backend) * self.floor_ms

    def request_tps(self, backend: str = "flashinfer_cutlass") -> float:
        """Tokens a second of one running request (one token a step)."""
        return 1000.0 / self.step_ms(backend)

    def util_pct(self) -> float:
        """NVML's utilisation: the share of time a kernel ran."""
        return round(100.0 * (1.0 - self.idle), 1)

    def dram_busy_pct(self, backend: str = "flashinfer_cutlass") -> float:
        """GPM DRAM bandwidth utilisation: the bytes moved a second over the peak."""
        return min(100.0, 100.0 * self.traffic / self.gap(backend))

    def token_usage(self, running: int) -> float:
        return min(0.999, running * self.context_tokens / self.kv_tokens)

    def planted(self) -> "Scenario":
        """What runs when started with its planted flags (the demo's first start)."""
        valued = dict(zip(self.flags, self.flags[1:]))  # a flag's value follows it
        return self.launched(Launch(cuda_graph="--disable-cuda-graph" not in self.flags,
                                    custom_all_reduce="--disable-custom-all-reduce"
                                    not in self.flags,
                                    mem_fraction=float(valued.get("--mem-fraction-static",
                                                                  MEM_FRACTION))))

    def launched(self, launch: "Launch") -> "Scenario":
        """What runs under ``launch``'s flags: a planted flag dropped ends its
        cause, a fix's flag relieves its cause (more KV room, a higher
        running cap), a simulated code fix removes what it names."""
        sc = self
        if launch.simulated_fix == sc.name:
            sc = replace(sc, **CURES.get(sc.name, {}))
        if sc.comm == "nccl" and launch.custom_all_reduce:
            sc = replace(sc, comm="custom", comm_us=2.0,
                         gpu_gap=min(sc.gpu_gap, HEALTHY_GAP) if sc.late_rank is None
                         else sc.gpu_gap)
        elif sc.comm != "nccl" and not launch.custom_all_reduce:
            sc = replace(sc, comm="nccl", comm_us=45.0)
        # the load: what the clients want running, capped by --max-running-requests and
        # by the KV pool (its size follows --mem-fraction-static and the KV dtype)
        kv = int(MAX_TOTAL_TOKENS * max(0.2, 1.0 + (launch.mem_fraction - MEM_FRACTION) * 10.0)
                 * (2 if launch.kv_fp8 else 1))
        demand = sc.running + sc.queued
        kv_room = int(KV_FULL * kv / sc.context_tokens)
        running = min(demand, launch.max_running, kv_room)
        kv_bound = kv_room < min(demand, launch.max_running)
        graphs = launch.cuda_graph and running <= launch.cuda_graph_max_bs
        if not sc.cuda_graph and graphs and "--disable-cuda-graph" in sc.flags:
            sc = replace(sc, cuda_graph=True, idle=HEALTHY_IDLE, forward_share=0.0)
        elif sc.cuda_graph and not graphs:  # eager (or a batch above the graphs): launch-bound
            sc = replace(sc, cuda_graph=False, idle=max(sc.idle, 0.5), forward_share=0.3)
        return replace(sc, kv_tokens=kv, max_running=launch.max_running, running=running,
                       mem_fraction=launch.mem_fraction,
                       queued=demand - running,
                       retract_every_s=(sc.retract_every_s or RETRACT_EVERY_S) if kv_bound else 0.0,
                       waste=RETRACT_WASTE if kv_bound else 0.0)

    def trace(self, backend: str, tp: int, steps: int) -> TraceSpec:
        """The capture's timeline: a few layers of each step."""
        spec = TraceSpec(ranks=tp, steps=max(3, min(steps, 12)), graphs=self.cuda_graph,
                         backend=backend, comm=self.comm, comm_us=self.comm_us,
                         late_rank=self.late_rank if self.late_rank is not None
                         and self.late_rank < tp else None,
                         late_us=self.late_us, syncs_per_step=self.syncs_per_step,
                         kernel_scale=1.0 / self.clock_ratio if self.clock_ratio < 1 else 1.0)
        if not self.cuda_graph:
            if self.syncs_per_step:  # the host is ahead but for the read backs
                return replace(spec, host_per_kernel_us=12.0, launch_us=5.0, step_gap_us=10.0,
                               sync_relaunch_us=150.0)
            return replace(spec, host_per_kernel_us=45.0)
        if self.stall_share:  # the stall between steps: its share of the step
            kernels = step_kernel_us(spec)
            return replace(spec, step_gap_us=kernels * self.idle / (1.0 - self.idle))
        return spec


@dataclass(frozen=True)
class Launch:
    """The server flags the simulator takes (those the findings' fix lines name)."""

    cuda_graph: bool = True  # --disable-cuda-graph turns it off
    custom_all_reduce: bool = True  # --disable-custom-all-reduce
    max_running: int = MAX_RUNNING  # --max-running-requests
    mem_fraction: float = MEM_FRACTION  # --mem-fraction-static
    kv_fp8: bool = False  # --kv-cache-dtype fp8_e4m3 / fp8_e5m2
    cuda_graph_max_bs: int = MAX_RUNNING  # --cuda-graph-max-bs
    simulated_fix: str | None = None  # --simulated-fix CAUSE: the code change, simulated


HEALTHY_IDLE, HEALTHY_GAP = 0.02, 1.2
KV_FULL = 0.99  # the scheduler admits requests until the pool is this full
RETRACT_EVERY_S = 4.0
RETRACT_WASTE = 0.25
# --simulated-fix CAUSE: the code change a fix line describes (no flag does it), simulated
CURES: dict[str, dict] = {
    "host-stall": {"idle": HEALTHY_IDLE, "stall_share": 0.0},
    "host-sync": {"cuda_graph": True, "idle": HEALTHY_IDLE, "syncs_per_step": 0,
                  "forward_share": 0.0},
    "straggler": {"late_rank": None, "late_us": 0.0, "stall_share": 0.0, "gpu_gap": HEALTHY_GAP},
    "wasted-traffic": {"traffic": 1.0, "gpu_gap": HEALTHY_GAP},
    "gpu-throttle": {"throttle_mask": 0, "clock_ratio": 1.0},
    "cpu-throttle": {"idle": HEALTHY_IDLE, "stall_share": 0.0, "cpu_psi": 0.0,
                     "cfs_throttled": 0.0, "cfs_throttled_time": 0.0},
}

HEALTHY = "healthy"
# one scenario per cause a diagnosis can name, from the one cause list
# (core/model/findings.py), after the healthy server: a cause without its
# scenario fails at import
SCENARIO_NAMES: tuple[str, ...] = (HEALTHY, *DIAGNOSES)
_PLANTED: dict[str, Scenario] = {s.name: s for s in (
    # launch-bound and exposed-comm are fixed by S without their planted flag ("")
    Scenario("healthy", "nothing: CUDA graphs on, no stall, the GPU busy near its floor "
             "(1.2x), no queue, no retractions", "no high finding: G, a capture and k say so",
             takes=("G", "capture", "stacks")),
    Scenario("host-stall", "a pure-Python stall in the scheduler loop, 50 % of wall time "
             "(simulated_host_stall); CUDA graphs on", "a capture (the GPU idles, host wait), "
             "then k: the stall's frame at its share of wall time",
             idle=0.5, stall_share=0.5, fix="--simulated-fix host-stall",
             takes=("capture", "stacks")),
    Scenario("launch-bound", "eager decode (--disable-cuda-graph): kernels shorter than their "
             "launch call, the GPU waits for the host", "a capture: cudaLaunchKernel per "
             "kernel, short kernels, host wait", cuda_graph=False, idle=0.5,
             forward_share=0.3, flags=("--disable-cuda-graph",),
             takes=("capture", "stacks")),
    Scenario("host-sync", "one value read back per layer (float(t): D2H copy + "
             "cudaStreamSynchronize, 4 a step), eager", "a capture: Memcpy DtoH by "
             "aten::_local_scalar_dense, syncs, host wait after them",
             cuda_graph=False, idle=0.45, syncs_per_step=4, forward_share=0.1,
             fix="--simulated-fix host-sync",
             takes=("capture",)),
    Scenario("kernel-below-roofline", "CUDA graphs on, the GPU busy, its MoE kernel "
             "(flashinfer_cutlass) far below its roofline: 2x the floor",
             "G (the gap) with NVML's busy GPU, a capture's top kernels; S with "
             "backend=flashinfer_cutedsl fixes it (1.1x)", gpu_gap=2.0,
             fix="backend=flashinfer_cutedsl",
             takes=("G", "capture")),
    Scenario("wasted-traffic", "the KV cache and MoE weights read twice: DRAM moves 2x "
             "the bytes a token needs", "G: the traffic ratio", gpu_gap=2.4, traffic=2.0,
             fix="--simulated-fix wasted-traffic",
             takes=("G",)),
    Scenario("exposed-comm", "--disable-custom-all-reduce: NCCL ring all-reduce after "
             "attention and the MoE, nothing overlaps it", "a capture (8 rank files): "
             "exposed communication", comm="nccl", comm_us=45.0, gpu_gap=1.6,
             flags=("--disable-custom-all-reduce",),
             takes=("capture",)),
    Scenario("straggler", "TP rank 3's scheduler stalls 300 us a step "
             "(simulated_late_rank_stall): the others wait in the all-reduce",
             "a capture (8 rank files): TP-3 spends least in NCCL", comm="nccl",
             comm_us=12.0, late_rank=3, late_us=300.0, gpu_gap=1.5, stall_share=0.2,
             stall_frame="simulated_late_rank_stall", flags=("--disable-custom-all-reduce",),
             fix="--disable-custom-all-reduce --simulated-fix straggler",
             takes=("capture",)),
    Scenario("kv-pressure", "the KV cache full: token usage 0.96-0.99, a retraction every "
             "4 s", "the log: token usage, \"KV cache pool is full. Retract requests.\"",
             running=58, queued=6, context_tokens=6650, retract_every_s=4.0,
             fix="--mem-fraction-static 0.9"),
    Scenario("gpu-memory-pressure", "--mem-fraction-static 0.92: NVML memory 98 % used, "
             "the KV cache full with it (token usage 0.97-0.98, a retraction every 4 s)",
             "NVML's memory used beside the log's token usage and retractions",
             running=58, queued=6, context_tokens=12000, retract_every_s=4.0,
             flags=("--mem-fraction-static", "0.92"), fix="--kv-cache-dtype fp8_e4m3"),
    Scenario("queueing", "max_running_requests reached with KV room: 40 requests queue",
             "the log: #queue-req > 0 at token usage 0.40", running=MAX_RUNNING,
             queued=40, fix="--max-running-requests 128 --cuda-graph-max-bs 128"),
    Scenario("gpu-throttle", "the GPUs held at 60 % of their SM clock by a power cap "
             "(SW power cap, SW thermal slowdown) while busy", "NVML clock-event reasons "
             "(simulated GPUs)", throttle_mask=SW_POWER_CAP | SW_THERMAL, clock_ratio=0.6,
             fix="--simulated-fix gpu-throttle"),
    Scenario("cpu-throttle", "the engine's cgroup CFS-throttled in 60 % of its periods, "
             "45 % of the time (PSI cpu some 55 %): the scheduler loop's Python "
             "(process_batch_result_decode) "
             "waits for a CPU and the GPU for the host; CUDA graphs on",
             "a capture (the GPU idles, host wait) beside the SIMULATED PSI and cpu.stat, "
             "then k: the scheduler's own frame", idle=0.5, stall_share=0.5,
             stall_frame="process_batch_result_decode", cpu_psi=55.0, cfs_throttled=60.0,
             cfs_throttled_time=45.0, fix="--simulated-fix cpu-throttle",
             takes=("capture", "stacks")),
    Scenario("near-floor", "nothing big left: the step 1.1x its floor", "G: the gap",
             gpu_gap=1.1, idle=0.01,
             takes=("G",)),
)}
SCENARIOS: dict[str, Scenario] = {name: _PLANTED[name] for name in SCENARIO_NAMES}
