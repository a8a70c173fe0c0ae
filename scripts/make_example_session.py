"""Regenerate sessions/example-moe-gap.jsonl: the seed investigation.

    python scripts/make_example_session.py

GLM-5-NVFP4 under SGLang with TP8 on one host with 8x NVIDIA RTX PRO 6000
Blackwell Server Edition (1792 GB/s each): decode runs at ~97 ms/token
(~10.3 tok/s in the `Decode batch` lines) against a memory-bandwidth floor
of ~3.2 ms/token, a 30x gap. Eleven hypotheses; the probes in the order they
were run; the MoE-backend hypothesis goes to testing and the server is
restarted with `--moe-runner-backend flashinfer_cutedsl` until its ready line.

Deterministic (fixed seed, fixed wall clock) and made of the real parts:
probe commands come from the probe kinds' own ``build``, their output is
what the kind's remote script prints and their verdicts come from the kind's
own ``interpret`` (as the probe runner does it); the gap is computed by
``core.analysis.roofline``; log lines use SGLang 0.5.23's formats as in
tests/fixtures/logs; host samples at 1 Hz and decode lines every ~3.9 s as a
live session records them. The file is written by the TranscriptWriter.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path

from perftriage.core import probes
from perftriage.core.analysis import roofline
from perftriage.core.model import events as ev
from perftriage.core.store import transcript

OUT = Path(__file__).resolve().parent.parent / "sessions" / "example-moe-gap.jsonl"
T0_WALL = 1796000000.0  # fixed: the file must not change between runs
START = datetime(2026, 11, 28, 9, 20, 0)  # the session's start, in the server log's clock
HOST = "gpu-a"
GPU_NAME = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
PYTHON = "/opt/sglang/.venv/bin/python"
SITE = "/opt/sglang/.venv/lib/python3.12/site-packages"
SERVER_LOG = "/var/log/sglang/server.log"
LAUNCH = ("python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp 8 "
          "--quantization modelopt_fp4 --mem-fraction-static 0.85 --cuda-graph-max-bs 64 "
          "--host 127.0.0.1 --port 30000")
RESTART = LAUNCH + " --moe-runner-backend flashinfer_cutedsl"

HYPOTHESES = [
    ("h1", "MoE experts run on flashinfer_cutlass, not a backend tuned for SM120",
     "try --moe-runner-backend flashinfer_cutedsl"),
    ("h2", "No expert parallelism: TP8 splits every expert 8 ways (try EP8)", ""),
    ("h3", "Piecewise CUDA graphs off: decode graphs too coarse", ""),
    ("h4", "Allreduce on NCCL over PCIe: MSCCLPP allreduce not enabled", ""),
    ("h5", "Kernel launch overhead dominates at batch 1", ""),
    ("h6", "NVFP4 weights dequantised to BF16 before the GEMM", ""),
    ("h7", "No NVLink: PCIe P2P between the 8 GPUs limits TP8", ""),
    ("h8", "GPUs power- or clock-throttled", "power ~180 W of 600 W"),
    ("h9", "Scheduler CPU-bound between decode steps", ""),
    ("h10", "Attention backend not tuned for SM120 (MLA on triton)", ""),
    ("h11", "KV cache in bf16: fp8 KV would halve attention reads", ""),
]


class Recorder:
    """Stamps events with session time and keeps them in order."""

    def __init__(self) -> None:
        self.events: list[ev.Event] = []

    def at(self, t: float, event: ev.Event) -> ev.Event:
        event.t = round(t, 3)
        event.wall = round(T0_WALL + event.t, 3)
        self.events.append(event)
        return event

    def sorted(self) -> list[ev.Event]:
        return sorted(self.events, key=lambda e: e.t)  # stable: same-time order kept


def stamp(t: float, rank: str | None = "TP0") -> str:
    clock = (START + timedelta(seconds=t)).strftime("%Y-%m-%d %H:%M:%S")
    return f"[{clock} {rank}]" if rank else f"[{clock}]"


# --- probes, as the probe runner records them ----------------------------------------


def result(data: dict, argv: list[str]) -> str:
    """What a probe script prints last: the marked result line."""
    return "\n" + probes.RESULT_MARK + json.dumps({**data, "argv": argv}) + "\n"


def probe(rec: Recorder, t: float, pid: str, kind: str, args: list[str], *, took: float,
          stdout: str, stderr: str = "", exit_status: int = 0) -> None:
    command = probes.build_command(kind, args, probes.HostContext(python=PYTHON))
    rec.at(t, ev.ProbeQueued(probe_id=pid, host=HOST, kind=kind, args=args, command=command,
                             timeout_s=60.0))
    rec.at(t + 0.004, ev.ProbeStarted(probe_id=pid))
    shown = probes.without_result(stdout) if probes.get(kind).result_line else stdout
    end = t + 0.004 + took
    for stream, text in (("stdout", shown), ("stderr", stderr)):
        if text:
            rec.at(end, ev.ProbeOutput(probe_id=pid, stream=stream, data=text))
    verdict = probes.get(kind).interpret(args, exit_status, stdout, stderr)
    rec.at(end, ev.ProbeFinished(probe_id=pid, status=verdict.status, exit_status=exit_status,
                                 duration_s=round(took, 6), summary=verdict.summary,
                                 detail=verdict.detail))


def traceback_text(module: str, missing: str) -> str:
    return ("Traceback (most recent call last):\n"
            "  File \"<string>\", line 10, in <module>\n"
            "  File \"/usr/lib/python3.12/importlib/__init__.py\", line 90, in import_module\n"
            "    return _bootstrap._gcd_import(name[level:], package, level)\n"
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            "  File \"<frozen importlib._bootstrap>\", line 1387, in _gcd_import\n"
            "  File \"<frozen importlib._bootstrap>\", line 1360, in _find_and_load\n"
            "  File \"<frozen importlib._bootstrap>\", line 1324, in _find_and_load_unlocked\n"
            f"ModuleNotFoundError: No module named '{missing}'\n")


GREP_MATCHES = [
    "sglang/srt/layers/moe/flashinfer_cutedsl_moe.py:18: def flashinfer_cutedsl_moe_masked(",
    "sglang/srt/layers/moe/utils.py:57: FLASHINFER_CUTEDSL = \"flashinfer_cutedsl\"",
    "sglang/srt/layers/moe/utils.py:80: def is_flashinfer_cutedsl(self):",
    "sglang/srt/layers/moe/utils.py:81: return self == MoeRunnerBackend.FLASHINFER_CUTEDSL",
    "sglang/srt/layers/quantization/modelopt_quant.py:1104: self.enable_flashinfer_cutedsl_moe = "
    "get_moe_runner_backend().is_flashinfer_cutedsl()",
    "sglang/srt/layers/quantization/modelopt_quant.py:1436: if self.enable_flashinfer_cutedsl_moe:",
    "sglang/srt/layers/quantization/modelopt_quant.py:1437: from "
    "sglang.srt.layers.moe.flashinfer_cutedsl_moe import flashinfer_cutedsl_moe_masked",
    "sglang/srt/server_args.py:3211: \"flashinfer_cutedsl\",",
]


def run_probes(rec: Recorder, t: float) -> float:
    """The probes in the order they were run; returns the time after the last."""
    url = "http://127.0.0.1:30000/start_profile"
    probe(rec, t, "p1", "http", [url], took=0.412, stdout=result(
        {"url": url, "status": 200, "reason": "OK", "content_type": "", "time_s": 0.0131,
         "body_bytes": 17, "body": "Start profiling.\n"}, [url]))
    t += 21.0
    # which is answered by sh: the count of names, then "-" for each one not found
    probe(rec, t, "p2", "which", ["nsys"], took=0.087, exit_status=1, stdout="1\n-\n")
    t += 38.0
    probe(rec, t, "p3", "grep", ["cutedsl", "sglang"], took=1.384, stdout=result(
        {"found": True, "package_dirs": [f"{SITE}/sglang"], "count": len(GREP_MATCHES),
         "files": 4, "searched": 1877, "matches": GREP_MATCHES, "truncated": False,
         "literal": False}, ["cutedsl", "sglang"]))
    t += 44.0
    for pid, module in (("p4", "flashinfer.jit.cutedsl"), ("p5", "flashinfer.cute")):
        probe(rec, t, pid, "import", [module], took=2.91 if pid == "p4" else 2.67,
              exit_status=1, stderr=traceback_text(module, module),
              stdout=result({"ok": False, "error": "ModuleNotFoundError",
                             "message": f"No module named '{module}'",
                             "import_s": 2.5832 if pid == "p4" else 2.3417}, [module]))
        t += 31.0
    # version is answered by sh (a venv: the dist-info's METADATA), no Python started
    probe(rec, t, "p6", "version", ["flashinfer-python"], took=0.021,
          stdout="\n" + probes.RESULT_MARK + json.dumps({"sh_versions": ["0.6.3"]}) + "\n")
    t += 47.0
    target = "sglang.srt.layers.moe.flashinfer_cutedsl_moe:flashinfer_cutedsl_moe_masked"
    probe(rec, t, "p7", "import", [target], took=7.126, stdout=result(
        {"ok": True, "module": target.partition(":")[0], "attr": "flashinfer_cutedsl_moe_masked",
         "file": f"{SITE}/sglang/srt/layers/moe/flashinfer_cutedsl_moe.py", "version": "0.5.23",
         "attr_type": "function", "import_s": 6.8312}, [target]))
    return t + 7.2


# --- hosts -------------------------------------------------------------------------------


def gpus(rng: random.Random, serving: bool, mem_mib: float) -> list[ev.GpuSample]:
    out = []
    for i in range(8):
        busy = serving and mem_mib > 80000
        out.append(ev.GpuSample(
            index=i, name=GPU_NAME, uuid=f"GPU-5e1f0c2a-77d1-4c3b-9a{i:02d}-0f6b2d8e91c{i}",
            util_pct=float(rng.randint(96, 100) if busy else (rng.randint(0, 3) if not serving
                                                              else rng.randint(20, 70))),
            mem_util_pct=float(rng.randint(4, 8) if busy else 0),
            mem_used_mib=mem_mib + 37 * i, mem_total_mib=97887.0,
            power_w=round(rng.uniform(168.0, 196.0) if busy else rng.uniform(92.0, 140.0), 2),
            power_limit_w=600.0, temp_c=float(41 + i % 4 + (6 if busy else 0)),
            sm_clock_mhz=float(2617 if busy else 2422), sm_clock_max_mhz=3090.0,
            mem_clock_mhz=13801.0, mem_clock_max_mhz=13801.0, pstate="P1" if busy else "P2",
            bus_width_bits=512, bandwidth_gbs=1792.0))
    return out


def samples(rec: Recorder, end: float, restart_at: float, ready_at: float, rng) -> None:
    t = 0.0
    while t <= end:
        rec.at(t + 0.31, ev.HostSample(
            host="localhost", cpu_pct=float(rng.randint(3, 9)), mem_used_bytes=5_112_004_608,
            mem_total_bytes=33_324_007_424, load1=0.41, gpus=[],
            gpu_error="no NVIDIA GPU (NVML: NVML Shared Library Not Found)"))
        if restart_at <= t < ready_at:  # weights loading, then CUDA graph capture
            loaded = min(1.0, (t - restart_at) / 160.0)
            mem, serving = 1200.0 + loaded * 83000.0, (t - restart_at) > 160.0
        else:
            mem, serving = 84620.0, True
        rec.at(t + 0.58, ev.HostSample(
            host=HOST, cpu_pct=round(rng.uniform(6.5, 9.5), 1), mem_used_bytes=412_318_720_000,
            mem_total_bytes=2_164_176_371_712, load1=9.12, load5=9.05, load15=8.97,
            gpus=gpus(rng, serving, mem)))
        t += 1.0


# --- the server log ------------------------------------------------------------------------


FIXTURE_STARTUP = [  # (seconds after launch, rank or None, text) as in tests/fixtures/logs
    (0, None, "server_args={{'model_path': 'zai-org/GLM-5-NVFP4', 'tp_size': 8, 'ep_size': 1, "
              "'quantization': 'modelopt_fp4', 'moe_runner_backend': '{backend}', "
              "'moe_a2a_backend': 'none', 'mem_fraction_static': 0.85, 'cuda_graph_max_bs': 64, "
              "'host': '127.0.0.1', 'port': 30000}}"),
    (8, "TP0", "Load weight begin. avail mem=93.12 GB"),
    (8, "TP3", "Load weight begin. avail mem=93.12 GB"),
    (166, "TP0", "Load weight end. elapsed=158.02 s, type=GlmMoeForCausalLM, quant=modelopt_fp4, "
                 "avail mem=52.37 GB, mem usage=40.75 GB."),
    (167, "TP0", "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 412160, K size: 18.86 GB, "
                 "V size: 18.86 GB"),
    (167, "TP0", "Memory pool end. avail mem=13.98 GB"),
    (168, "TP0", "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, "
                 "avail mem=13.71 GB"),
    (210, "TP0", "Capture target decode CUDA graph end. bs=[1, 2, 4, 8, 16, 24, 32, 40, 48, 56, "
                 "64], elapsed=42.11 s, mem usage=1.03 GB, avail mem=12.68 GB"),
    (211, "TP0", "max_total_num_tokens=412160, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                 "max_running_requests=64, context_len=202752, available_gpu_mem=12.68 GB"),
    (212, None, "INFO:     Started server process [{pid}]"),
    (212, None, "INFO:     Waiting for application startup."),
    (212, None, "INFO:     Application startup complete."),
    (212, None, "INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)"),
    (213, None, "INFO:     127.0.0.1:51234 - \"GET /model_info HTTP/1.1\" 200 OK"),
    (214, "TP0", "Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, #token: 0, "
                 "token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, "
                 "cuda graph: False, input throughput (token/s): 0.00"),
    (216, None, "INFO:     127.0.0.1:51240 - \"POST /generate HTTP/1.1\" 200 OK"),
    (216, None, "The server is fired up and ready to roll!"),
]


def startup_lines(launch_t: float, backend: str, pid: int) -> list[tuple[float, str]]:
    return [(launch_t + dt, f"{stamp(launch_t + dt, rank)} "
                            + text.format(backend=backend, pid=pid))
            for dt, rank, text in FIXTURE_STARTUP]


def decode_lines(start: float, end: float, rng: random.Random) -> list[tuple[float, str]]:
    """One client at a time: a prefill, then a decode line every 40 tokens at
    ~10.3 tok/s (~3.9 s), the request's access line after 1024 tokens."""
    out: list[tuple[float, str]] = []
    t, port = start, 51260
    while t < end:
        prompt = rng.choice((812, 790, 845, 803))
        out.append((t, f"{stamp(t)} Prefill batch, #new-seq: 1, #new-token: {prompt}, "
                       "#cached-token: 0, #token: 0, token usage: 0.00, #running-req: 0, "
                       "#queue-req: 0, #pending-token: 0, cuda graph: False, input throughput "
                       f"(token/s): {rng.uniform(300, 320):.2f}"))
        tokens = prompt
        for _ in range(25):
            tps = rng.uniform(10.22, 10.38)
            t += 40 / tps
            tokens += 40
            if t >= end:
                return out
            out.append((t, f"{stamp(t)} Decode batch, #running-req: 1, #token: {tokens}, token "
                           f"usage: 0.00, cuda graph: True, gen throughput (token/s): {tps:.2f}, "
                           "#queue-req: 0"))
        t += 2.4
        port += 2
        out.append((t, f"{stamp(t, None)} INFO:     127.0.0.1:{port} - \"POST /generate "
                       "HTTP/1.1\" 200 OK"))
        t += 1.1
    return out


def log(rec: Recorder, source_id: str, lines: list[tuple[float, str]], flush_s: float = 0.25) -> None:
    """Lines arrive in batches, as the follower emits them (a batch per read)."""
    batch: list[str] = []
    batch_t = None
    for t, line in sorted(lines, key=lambda x: x[0]):  # stable: same-second order kept
        if batch and t - batch_t > flush_s:  # type: ignore[operator]
            rec.at(batch_t + 0.05, ev.LogLines(source_id=source_id, lines=batch))  # type: ignore[operator]
            batch = []
        if not batch:
            batch_t = t
        batch.append(line)
    if batch:
        rec.at(batch_t + 0.05, ev.LogLines(source_id=source_id, lines=batch))  # type: ignore[operator]


# --- the investigation ----------------------------------------------------------------------


def events() -> list[ev.Event]:
    rng = random.Random(15)
    rec = Recorder()
    rec.at(0.0, ev.HostStatus(host="localhost", state="up"))
    rec.at(0.02, ev.HostStatus(host=HOST, state="connecting"))
    rec.at(1.18, ev.HostStatus(host=HOST, state="up"))
    rec.at(1.9, ev.HostInfo(host=HOST, info={
        "driver": "580.95.05", "bandwidth_gbs": {str(i): 1792.0 for i in range(8)},
        "bus_width_bits": {str(i): 512 for i in range(8)}, "bandwidth_gbs_total": 14336.0,
        "gpu_source": "nvidia-smi"}))
    rec.at(2.4, ev.LogSourceOpened(source_id="l1", host=HOST, path=SERVER_LOG))
    # the follower starts with the last lines of the file: the server's start at 09:12
    backlog = [line for _, line in startup_lines(-479.0, "flashinfer_cutlass", 20431)]
    backlog += [line for _, line in decode_lines(-420.0, -6.0, random.Random(7))][-30:]
    rec.at(2.9, ev.LogLines(source_id="l1", lines=backlog))

    t = 14.0
    for hyp_id, title, note in HYPOTHESES:  # typed one after another
        rec.at(t, ev.HypothesisAdded(hyp_id=hyp_id, title=title, note=note))
        t += rng.uniform(9.0, 16.0)
    # the gap, from the hosts' peak bandwidth and the log's batch-1 decode speed
    r = roofline.compute(gpus=8, weights_gb=46.08, bandwidth_gbs=1792.0, measured_ms=97.0)
    inputs = {"weights_gb": 46.08, "gpus": 8, "bandwidth_gbs": 1792.0, "measured_ms": 97.0,
              "gpu": GPU_NAME}
    gap_t = t + 12.0
    rec.at(gap_t, ev.GapComputed(floor_ms=r.floor_ms, ceiling_tps=r.ceiling_tps,
                                 bandwidth_gbs_total=r.bandwidth_gbs_total,
                                 measured_ms=r.measured_ms, gap=r.gap,
                                 efficiency_pct=r.efficiency_pct, inputs=inputs))
    rec.at(gap_t + 8.0, ev.NoteAdded(text="batch-1 decode 10.3 tok/s = 97 ms/token vs a 3.2 ms "
                                          "floor: 30x. Power ~180 W of 600 W on every GPU."))
    rec.at(gap_t + 15.0, ev.HypothesisUpdated(hyp_id="h8", status="refuted"))
    rec.at(gap_t + 15.5, ev.EvidenceLinked(hyp_id="h8", ref_kind="note", ref_id="note0",
                                           stance="against", summary="clocks at 2617 MHz, P1, "
                                           "no throttle reasons; power 170-195 W"))

    probes_t = gap_t + 30.0
    after = run_probes(rec, probes_t)
    rec.at(probes_t + 6.0, ev.EvidenceLinked(hyp_id="h5", ref_kind="probe", ref_id="p1",
                                             stance="for", summary="/start_profile answers: a "
                                             "torch profile can show launch gaps"))
    rec.at(probes_t + 62.0, ev.EvidenceLinked(hyp_id="h1", ref_kind="probe", ref_id="p3",
                                              stance="for", summary="sglang has a flashinfer_"
                                              "cutedsl MoE runner backend"))
    rec.at(probes_t + 118.0, ev.EvidenceLinked(hyp_id="h1", ref_kind="probe", ref_id="p4",
                                               stance="against", summary="flashinfer.jit.cutedsl "
                                               "missing in flashinfer 0.6.3"))
    rec.at(after + 6.0, ev.EvidenceLinked(hyp_id="h1", ref_kind="probe", ref_id="p7",
                                          stance="for", summary="flashinfer_cutedsl_moe_masked "
                                          "imports: the backend can load"))
    rec.at(after + 9.0, ev.HypothesisUpdated(hyp_id="h1", status="testing"))
    note_t = after + 24.0
    rec.at(note_t, ev.NoteAdded(text="flashinfer.cute and flashinfer.jit.cutedsl are absent from "
                                     "flashinfer-python 0.6.3, but sglang's cutedsl MoE entry "
                                     "point imports. Restarting with --moe-runner-backend "
                                     "flashinfer_cutedsl."))
    restart_t = note_t + 11.0
    ready_t = restart_t + 216.4
    rec.at(restart_t, ev.ServerEvent(server="sglang", host=HOST, state="starting", command=RESTART))
    rec.at(restart_t + 0.3, ev.LogSourceOpened(source_id="l2", host=HOST, kind="server",
                                               path="sglang: /tmp/sglang.log"))
    new_server = startup_lines(restart_t + 0.6, "flashinfer_cutedsl", 48112)
    log(rec, "l2", new_server)
    ready_line = new_server[-1][1]
    rec.at(ready_t, ev.ServerEvent(server="sglang", host=HOST, state="ready", command=RESTART,
                                   detail=f"ready line: {ready_line}",
                                   time_to_ready_s=round(ready_t - restart_t, 3)))
    # the old server served until it was stopped for the restart
    log(rec, "l1", decode_lines(4.0, restart_t - 2.0, rng))
    rec.at(restart_t - 1.0, ev.LogLines(source_id="l1", lines=[
        f"{stamp(restart_t - 1.0, None)} INFO:     Shutting down",
        f"{stamp(restart_t - 1.0, None)} INFO:     Finished server process [20431]"]))
    rec.at(restart_t - 0.5, ev.LogSourceClosed(source_id="l1", reason="server stopped"))
    end = ready_t + 6.0
    samples(rec, end, restart_t, ready_t, rng)
    out = rec.sorted()
    out.append(ev.SessionEnded(reason="quit"))
    out[-1].t, out[-1].wall = round(end + 0.5, 3), round(T0_WALL + end + 0.5, 3)
    return out


def main() -> None:
    OUT.parent.mkdir(exist_ok=True)
    if OUT.exists():
        OUT.unlink()
    header = transcript.make_header((START.isoformat() + "+00:00"), ["localhost", HOST],
                                    name="example-moe-gap")
    header["perftriage"] = "example"  # stable across versions
    w = transcript.TranscriptWriter(OUT, header, background=False)
    for e in events():
        w.write(e)
    w.close()
    print(OUT)


if __name__ == "__main__":
    main()
