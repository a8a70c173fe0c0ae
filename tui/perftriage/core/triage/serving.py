"""What the engine's own log and metrics say (SGLang's tuning page reads the
same lines): a full KV cache that retracts requests, a queue the server
cannot drain, a batch the client never fills, and a decode already near
its floor.
"""

from __future__ import annotations

from perftriage.core.triage.model import Evidence, Finding, NextStep
from perftriage.core.triage.rules import rule
from perftriage.core.triage.witnesses import Witnesses

FULL_USAGE = 0.95  # token usage at which the KV cache counts as full
RETRACT_PER_MIN = 1.0  # SGLang: a retraction about once a minute is fine
ROOM_USAGE = 0.9  # below this the KV cache has room: a queue is the server's
SMALL_BATCH = 4.0  # running requests at or under this with no queue: the client sends few
NEAR_FLOOR = 1.3  # within 1.3x of the floor: nothing big left


def _span(seconds: float) -> str:
    """``12 s``, ``3 min``: the window a count was seen in."""
    seconds = max(seconds, 1.0)
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _retractions(n: int) -> str:
    return "no retraction yet" if not n else f"{n} retraction{'s' if n != 1 else ''}"


@rule("kv-pressure", own=("log", "engine"), per_request=True)
def kv_finding(w: Witnesses, busy_pct: float | None = None) -> Finding | None:
    rate = w.retractions / w.minutes
    full = w.full_kv_share or 0.0
    if rate <= RETRACT_PER_MIN and full < 0.5:
        return None
    running, queued = w.running or 0.0, w.queued or 0.0
    waiting = 100.0 * queued / (running + queued) if running + queued > 0 else 0.0
    # retracted requests redo their prefill; a full cache caps the batch
    explains = max(waiting, min(100.0, 5.0 * rate), 100.0 * full * 0.2)
    span = _span(w.end - w.start)
    per_minute = f" ({rate:.1f} a minute)" if w.minutes >= 1.0 else ""
    ev = []
    if w.retractions:
        ev.append(Evidence("log", f"{w.retractions} × \"KV cache pool is full. Retract "
                                  f"requests\" in {span}{per_minute}", w.end, "log"))
    if w.token_usage is not None:
        ev.append(Evidence("log", f"token usage {w.token_usage:.2f} (median); at ≥ {FULL_USAGE} "
                                  f"{full * 100:.0f} % of the time", w.end, "log"))
    return Finding(
        cause="kv-pressure", explains_pct=explains, host=w.host,
        # what was seen, counted: a rate over the first seconds reads "0.0 a minute"
        title=(f"the KV cache is full: {_retractions(w.retractions)} in the last {span}"
               + (" and requests wait" if queued else "")),
        evidence=ev,
        fix=["more KV room: --mem-fraction-static up, a smaller --max-running-requests, "
             "FP8 KV cache (--kv-cache-dtype fp8_e4m3), or more GPUs"],
        next=NextStep("log-search", ["Retract"], "the log's retraction lines, in time order"))


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
    if w.gap is None or not 0.0 < w.gap <= NEAR_FLOOR:  # a recorded gap of 0 (or NaN): no finding
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
