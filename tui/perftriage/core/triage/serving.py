"""What the engine's own log and metrics say (SGLang's tuning page reads the
same lines): a full KV cache that retracts requests, the same on a GPU
whose memory has no room left to give it, a queue the server cannot drain,
a batch the client never fills, and a decode already near its floor.
"""

from __future__ import annotations

from perftriage.core.model.findings import Evidence, Finding, NextStep
from perftriage.core.triage.rules import rule
from perftriage.core.triage.witnesses import Witnesses

FULL_USAGE = 0.95  # token usage at which the KV cache counts as full
RETRACT_PER_MIN = 1.0  # SGLang: a retraction about once a minute is fine
ROOM_USAGE = 0.9  # below this the KV cache has room: a queue is the server's
SMALL_BATCH = 4.0  # running requests at or under this with no queue: the client sends few
NEAR_FLOOR = 1.3  # within 1.3x of the floor: nothing big left
# a step measured faster than this share of its memory-bandwidth floor moved fewer
# bytes than the gap was told it must: the gap's inputs are off, not the server
# (a little under 1x is the measurement's noise at the floor itself)
GAP_MIN = 0.9
MEM_FULL_PCT = 97.0  # NVML memory used at or above this share of the total: no room left


def _span(seconds: float) -> str:
    """``12 s``, ``3 min``: the window a count was seen in."""
    seconds = max(seconds, 1.0)
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _retractions(n: int) -> str:
    return "no retraction yet" if not n else f"{n} retraction{'s' if n != 1 else ''}"


def _kv_full(w: Witnesses) -> tuple[float, float, float] | None:
    """(retractions a minute, share of readings at a full cache, the share of
    the time it costs) when the KV cache is full, else None."""
    rate = w.retractions / w.minutes
    full = w.full_kv_share or 0.0
    if rate <= RETRACT_PER_MIN and full < 0.5:
        return None
    # retracted requests redo their prefill; a full cache caps the batch
    return rate, full, max(_waiting_pct(w), min(100.0, 5.0 * rate), 100.0 * full * 0.2)


def _waiting_pct(w: Witnesses) -> float:
    """The share of the requests that wait (queued of running + queued, medians)."""
    running, queued = w.running or 0.0, w.queued or 0.0
    return 100.0 * queued / (running + queued) if running + queued > 0 else 0.0


def _kv_evidence(w: Witnesses, rate: float, full: float, source: str) -> list[Evidence]:
    span = _span(w.end - w.start)
    per_minute = f" ({rate:.1f} a minute)" if w.minutes >= 1.0 else ""
    ev = []
    if w.retractions:
        ev.append(Evidence("log", f"{w.retractions} × \"KV cache pool is full. Retract "
                                  f"requests\" in {span}{per_minute}", w.end, "log"))
    if w.token_usage is not None:
        ev.append(Evidence(source, f"token usage {w.token_usage:.2f} (median); at ≥ "
                                   f"{FULL_USAGE} {full * 100:.0f} % of the time", w.end, source))
    return ev


@rule("kv-pressure", own=("log", "engine"), per_request=True)
def kv_finding(w: Witnesses, busy_pct: float | None = None) -> Finding | None:
    full_kv = _kv_full(w)
    if full_kv is None or _memory_full(w):  # no memory to give it: gpu-memory-pressure's
        return None
    rate, full, explains = full_kv
    span = _span(w.end - w.start)
    return Finding(
        cause="kv-pressure", explains_pct=explains, host=w.host,
        # what was seen, counted: a rate over the first seconds reads "0.0 a minute"
        title=(f"the KV cache is full: {_retractions(w.retractions)} in the last {span}"
               + (" and requests wait" if w.queued else "")),
        evidence=_kv_evidence(w, rate, full, "log"),
        fix=["more KV room: --mem-fraction-static up, a smaller --max-running-requests, "
             "FP8 KV cache (--kv-cache-dtype fp8_e4m3), or more GPUs"],
        next=NextStep("log-search", ["Retract"], "the log's retraction lines, in time order"))


def _memory_full(w: Witnesses) -> bool:
    """NVML's memory at MEM_FULL_PCT or more and the KV cache in use up to its room."""
    return (w.gpu_mem_pct is not None and w.gpu_mem_pct >= MEM_FULL_PCT
            and ((w.token_usage is not None and w.token_usage >= ROOM_USAGE)
                 or _kv_full(w) is not None))


@rule("gpu-memory-pressure", own=("nvml", "log", "engine"), per_request=True)
def memory_finding(w: Witnesses, busy_pct: float | None = None) -> Finding | None:
    """The GPUs' memory is full (NVML: used ≥ 97 % of the total on the
    fullest GPU, median of the phase) while the KV cache is in use up to
    its room (token usage ≥ 0.9, or full and retracting): the KV pool cannot
    grow, and what is left beside it (activations, CUDA graphs, NCCL) is
    ≤ 3 % of the GPU. kv-pressure's usual fix (--mem-fraction-static up)
    has no memory to take, so this finding takes its place (kv_finding
    defers to it) and its cost: the KV cache's, when it is full, else the
    share of requests that wait. With no retraction and no queue it costs
    nothing yet (no share; said as "against").

    What it rests on, read in the wheels (sglang 0.5.23, vllm 0.34.0):

    - SGLang sizes the KV pool from the memory free after the weights less
      ``pre_model_load_memory * (1 - mem_fraction_static)``
      (sglang/srt/mem_cache/kv_cache_configurator.py:2990-3038), so NVML's
      memory used stays near ``--mem-fraction-static`` of the total plus
      the CUDA graphs' and activations' share; the flag's help says "Use a
      smaller value if you see out-of-memory errors"
      (sglang/srt/arg_groups/fields/schedule.py:27-30).
    - KV usage: SGLang's gauge ``sglang:token_usage`` (the fullest pool,
      sglang/srt/observability/metrics_collector.py:92-97, 404-409) and its
      decode lines' ``token usage: 0.93``
      (managers/scheduler_components/pool_stats_observer.py:116); vLLM's
      ``vllm:kv_cache_usage_perc``, "1 means 100 percent usage"
      (vllm/v1/metrics/loggers.py:619-621) — a fraction, as SGLang's
      (core/parse/engine_metrics.py reads both as ``token_usage``).
    - vLLM's ``--gpu-memory-utilization`` is "the fraction of GPU memory to
      be used for the model executor" (vllm/config/cache.py:216-224): the
      same knob.
    - "KV cache pool is full. Retract requests." (sglang/srt/managers/
      scheduler.py:4526): the retraction kv-pressure counts.
    """
    if not _memory_full(w):
        return None
    mem = w.gpu_mem_pct or 0.0
    running, queued = w.running or 0.0, w.queued or 0.0
    source = "log" if w.decode_tps is not None else "engine"  # the decode lines say both
    full_kv = _kv_full(w)
    rate, full = (full_kv[0], full_kv[1]) if full_kv else (0.0, w.full_kv_share or 0.0)
    ev = [Evidence("nvml", f"GPU memory used {mem:.1f} % of the total on the fullest GPU "
                           f"(median over {_span(w.end - w.start)}): ≤ {100 - mem:.1f} % left "
                           "for activations, CUDA graphs and NCCL", w.end, "nvml"),
          *_kv_evidence(w, rate, full, source)]
    against: list[Evidence] = []
    if queued > 0:
        ev.append(Evidence(source, f"#queue-req {queued:.0f}, #running-req {running:.0f} "
                                   "(medians): requests wait for KV room", w.end, source))
    if full_kv is not None:
        explains: float | None = full_kv[2]
        cost = f"{_retractions(w.retractions)} in the last {_span(w.end - w.start)}" + (
            " and requests wait" if queued else "")
    elif queued > 0:
        explains = _waiting_pct(w)
        cost = f"{queued:.0f} requests wait for KV room"
    else:
        explains, cost = None, "nothing lost yet"
        against.append(Evidence(source, f"no retraction and no queue in "
                                        f"{_span(w.end - w.start)}: the batch still fits "
                                        "(a longer prompt or a larger batch has no room)",
                                w.end, source))
    return Finding(
        cause="gpu-memory-pressure", explains_pct=explains, host=w.host,
        title=(f"the GPU's memory is full ({mem:.0f} % used) and the KV cache with it"
               + (f" (token usage {w.token_usage:.2f})" if w.token_usage is not None else "")
               + f": {cost}; no memory left to grow the KV pool"),
        evidence=ev, against=against,
        fix=["more KV room without more memory: FP8 KV cache (--kv-cache-dtype fp8_e4m3), "
             "or more GPUs (a larger --tp splits the weights)",
             "fewer running requests (--max-running-requests; vLLM --max-num-seqs) so the "
             "batch fits the pool and none is retracted",
             "headroom for activations and CUDA graphs: --mem-fraction-static down "
             "(vLLM --gpu-memory-utilization) until NVML's memory stays under 97 %"],
        # SGLang's "Load weight end. ... avail mem=" (model_executor/model_runner.py:1373),
        # "Memory pool end. avail mem=" (mem_cache/kv_cache_configurator.py:499) and
        # "Capturing batches (bs=... avail_mem=...)" (decode_cuda_graph_runner.py:1343)
        next=NextStep("log-search", ["avail.mem"], "the start-up lines say where the "
                      "memory went: the weights, the KV pool (Memory pool end), what is "
                      "left after the CUDA graphs"))


@rule("queueing", own=("log", "engine"), per_request=True)
def queue_finding(w: Witnesses, busy_pct: float | None = None) -> Finding | None:
    running, queued = w.running, w.queued
    if running is None or queued is None:
        return None
    usage = w.token_usage
    if queued > 0 and (usage is None or usage < ROOM_USAGE):
        share = 100.0 * queued / (running + queued)
        return Finding(
            cause="queueing", explains_pct=share, host=w.host,
            title=(f"requests queue with KV room left ({queued:.0f} queued, {running:.0f} "
                   f"running): the server admits too few"),
            evidence=[Evidence("log", f"#queue-req {queued:.0f}, #running-req {running:.0f}, "
                                      f"token usage {usage if usage is not None else 'n/a'} "
                                      "(medians)", w.end, "log")],
            fix=["raise --max-running-requests / --cuda-graph-max-bs, check "
                 "--schedule-conservativeness and the chunked prefill size"])
    if queued == 0 and 0 < running <= SMALL_BATCH:
        return Finding(
            cause="queueing", explains_pct=None, host=w.host,
            title=(f"client-limited: no queue and {running:.0f} running — not a server problem; "
                   "send more concurrent requests to measure the server"),
            evidence=[Evidence("log", f"#queue-req 0, #running-req {running:.0f} (medians)",
                               w.end, "log")])
    return None


@rule("near-floor")
def floor_finding(w: Witnesses, busy_pct: float | None = None) -> Finding | None:
    if w.gap is None or not GAP_MIN <= w.gap <= NEAR_FLOOR:  # 0, NaN, faster than the floor
        return None
    left = max(0.0, (w.gap - 1.0) / w.gap * 100.0)
    return Finding(
        cause="near-floor", explains_pct=left, host=w.host,
        title=f"within {w.gap:.2f}x of the memory-bandwidth floor: nothing big left",
        evidence=[Evidence("gap", f"gap {w.gap:.2f}x (median of the phase)", w.end, "gap")],
        fix=["fewer bytes per token (quantisation, speculative decoding) or more bandwidth"])


GAP_BUSY_PCT = 50.0  # the GPU busy at least this: its traffic and floor are the question


@rule("wasted-traffic", own=("gap",), busy_time=True)
def gap_lead(w: Witnesses, busy_pct: float | None) -> Finding | None:
    """wasted-traffic and near-floor need the bytes a step must move (the
    weights, the KV per token): with the GPU busy and no gap yet, a lead
    whose next step is the gap form (``G``: ``Y`` never asked
    for it, and a double read stayed unseen)."""
    if w.gap is not None and 0.0 < w.gap < GAP_MIN:
        return Finding(
            cause="wasted-traffic", confirmed=False, explains_pct=None, host=w.host,
            # what to do first: a 100-column row keeps about 45 characters of it
            title=(f"G's inputs are off: the step runs {w.gap:.2f}x its memory floor, faster "
                   "than the bytes allow (fewer bytes a step, or more GPUs or bandwidth)"),
            evidence=[Evidence("gap", f"gap {w.gap:.2f}x (median of the phase): measured "
                                      "faster than the floor", w.end, "gap")],
            next=NextStep("gap", [], "G: correct the bytes a step must move (the active "
                          "weights and KV), the GPUs or their bandwidth"))
    if w.gap is not None or w.traffic_ratio is not None:
        return None
    if busy_pct is None or busy_pct < GAP_BUSY_PCT:
        return None
    return Finding(
        cause="wasted-traffic", confirmed=False, explains_pct=None, host=w.host,
        # short: the Triage view's column keeps its "(G)" (it cut a longer title off)
        title=(f"the GPU is busy {busy_pct:.0f} %: need the bytes a step must move (G) to "
               "tell wasted traffic from near the floor"),
        next=NextStep("gap", [], "G: the weights and KV a step must read; the gap then "
                      "says the floor, how far above it the step is and the traffic ratio"))
