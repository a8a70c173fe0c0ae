"""The live gap of one host from the session state (the Gap view and the
recorded ``gap.sample`` events use the same function, so replay shows what
was seen live).

Bytes per step come from the latest roofline inputs (the G form's
``gap.computed`` event); the measured ms/token from the engine's mean
inter-token latency when a /metrics endpoint reports it, else tokens/s and
the batch size from the followed log with the newest decode line; counters and peaks from the host's latest
``gpu.counters``; NVLink capacity from the host's info
(``nvlink_capacity_gbs``, per GPU and direction).

A decode rate read before the host's server last started or stopped is the
old server's: never the measured ms/token of now. On a real H200 the walk's
restart left the gap at the old 37.6 ms/token (9.05x) for six seconds with
the GPU 100 % idle, and the fix's outcome read "gap 9.0 → 9.1x =" while the
new server ran at 4.5 ms (1.07x).
"""

from __future__ import annotations

from perftriage.core.analysis import gap as gap_math
from perftriage.core.analysis import roofline
from perftriage.core.model.state import SessionState


def bytes_from_inputs(inputs: dict) -> float | None:
    try:
        return roofline.bytes_per_step_gb(
            inputs.get("weights_gb"), inputs.get("active_params_b"), inputs.get("bits"),
            inputs.get("kv_gb"))
    except (roofline.RooflineError, TypeError):
        return None


def server_changed_at(state: SessionState, host: str) -> float | None:
    """When a server perftriage runs on ``host`` last started, stopped,
    exited or failed (session time), or None. Not when it became ready: its
    first decode lines can come before its ready line."""
    for e in reversed(state.server_events):
        if e.state != "ready" and e.host == host:
            return e.t
    return None


def _fresh(state: SessionState, host: str, t: float | None) -> bool:
    """A reading at ``t`` is of the server running now: taken after its
    host's server last started or stopped."""
    changed = server_changed_at(state, host)
    return changed is None or (t is not None and t > changed)


def token_rate(state: SessionState) -> tuple[float | None, int | None]:
    """(gen tok/s, running requests) of the log whose metrics came last,
    read since its host's server last started or stopped."""
    best = None
    for src in state.logs.values():
        m = src.metrics
        if not _fresh(state, src.host, src.metrics_t):
            continue
        if m.latest_gen_tps and (best is None or m.count > best.count):
            best = m
    if best is None:
        return None, None
    return best.latest_gen_tps, best.latest_running


def engine_rate(state: SessionState, host: str | None = None) -> tuple[float | None, int | None]:
    """(tok/s, batch) equivalent to the engine's own mean inter-token latency
    (its /metrics): one decode step of ``batch`` requests takes the
    ITL, so measured ms/token is the ITL itself - more exact than the log's
    tokens/s. The endpoint of ``host`` first, else any; (None, None) without
    one, or with only readings from before its server last started or
    stopped, or while it does not answer."""
    engines = sorted(state.engines.values(), key=lambda es: es.host != host)
    for es in engines:
        if es.conn_state in ("retrying", "down") or not _fresh(state, es.host, es.sample_t):
            continue  # its last figures are of a server that no longer answers
        if ms := es.ms_per_token:
            running = es.figures.running
            batch = int(running) if running and running >= 1 else 1
            return 1000.0 * batch / ms, batch
    return None, None


def engine_estimates(state: SessionState, host: str | None = None
                     ) -> tuple[float | None, float | None]:
    """(the engine's own read GB/s per GPU, speculative accept length): from
    its /metrics (``host``'s first), else from the followed logs."""
    read = accept = None
    for es in sorted(state.engines.values(), key=lambda es: es.host != host):
        read = read if read is not None else es.figures.engine_read_gbs
        accept = accept if accept is not None else es.figures.spec_accept_length
    for src in state.logs.values():
        read = read if read is not None else src.metrics.engine_read_gbs
        accept = accept if accept is not None else src.metrics.spec_accept_len
    return read, accept


def counters_host(state: SessionState, prefer: str | None = None) -> str | None:
    """The host to show: ``prefer`` when it has counters, else the first that has."""
    if prefer and (hs := state.hosts.get(prefer)) and hs.counters is not None:
        return prefer
    for name, hs in state.hosts.items():
        if hs.counters is not None and hs.counters.gpus:
            return name
    for name, hs in state.hosts.items():
        if hs.counters is not None:
            return name
    return None


def live_gap(state: SessionState, host: str, inputs: dict | None = None) -> gap_math.GapResult | None:
    """The gap of ``host`` now; ``inputs`` (roofline keywords) default to the
    latest recorded ones."""
    hs = state.hosts.get(host)
    if hs is None or hs.counters is None:
        return None
    if inputs is None:
        inputs = state.gaps[-1].inputs if state.gaps else {}
    counters = hs.counters.gpus
    peaks = [c.peak_gbs for c in counters if c.peak_gbs]
    peak = sum(peaks) / len(peaks) if peaks else None
    n_gpus = inputs.get("gpus") if isinstance(inputs.get("gpus"), int) else None
    tps, batch = engine_rate(state, host)
    if tps is None:
        tps, batch = token_rate(state)
    capacity = hs.info.get("nvlink_capacity_gbs") or {}
    read, accept = engine_estimates(state, host)
    return gap_math.compute(
        bytes_gb=bytes_from_inputs(inputs), counters=counters, peak_gbs=peak, n_gpus=n_gpus,
        tokens_per_s=tps, batch=batch,
        nvlink_capacity_gbs=min(capacity.values()) if capacity else None,
        source=hs.counters.source, error=hs.counters.error,
        engine_read_gbs=read, accept_len=accept)
