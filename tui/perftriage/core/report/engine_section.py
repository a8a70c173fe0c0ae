"""The report's "Engine metrics" section: what each engine's /metrics said
over the session (from the replayed ``engine.sample`` events)."""

from __future__ import annotations

from perftriage.core.model.engine_window import mean_of, quantiles_of
from perftriage.core.model.state import SessionState
from perftriage.core.report.md_text import code, inline

# the log's and the engine's decode throughput measure different things: say so
WHY_THEY_DIFFER = (
    "not the log's figure: the log's `gen throughput` is the scheduler's decode tokens over "
    "the time between two of its decode lines (per rank, busy time only); this is the "
    "/metrics counter of generated tokens over the whole scrape span, idle and warm-up "
    "included — expect it lower while the load is not steady")

LATENCIES = (("ttft", "TTFT"), ("itl", "inter-token latency"), ("e2e", "end-to-end"),
             ("queue", "queue time"))


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.0f}%"


def _num(x: float | None, fmt: str = "{:.0f}") -> str:
    return "n/a" if x is None else fmt.format(x)


def _ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 1000:.1f}"


def engine_section(state: SessionState) -> list[str]:
    if not state.engines:
        return []
    out = ["## Engine metrics", ""]
    for es in state.engines.values():
        f = es.figures
        span = (es.sample_t - es.first_t) if es.sample_t is not None and es.first_t is not None \
            else 0.0
        what = f.engine or "unknown engine"
        out.append(f"- {code(es.source)} ({inline(what)}, {code(es.url or '?')} read on {inline(es.host)}): "
                   f"{es.scrapes} scrapes over {span:.0f} s, endpoint {es.conn_state}"
                   + (f" ({inline(es.reason)})" if es.reason else ""))
        if span > 0:
            gen = es.session_counters.get("generation_tokens")
            prompt = es.session_counters.get("prompt_tokens")
            out.append(f"  - session mean: generation {_num(gen and gen / span, '{:.1f}')} tok/s, "
                       f"prompt {_num(prompt and prompt / span, '{:.1f}')} tok/s")
            out.append(f"  - {WHY_THEY_DIFFER}")
        for name, label in LATENCIES:
            h = es.session_hists.get(name)
            if h is None or h.count <= 0:
                continue
            q = quantiles_of(h)
            out.append(f"  - {label}: p50 {_ms(q.p50)} / p90 {_ms(q.p90)} / p99 {_ms(q.p99)} ms, "
                       f"mean {_ms(mean_of(h))} ms over {h.count:.0f} observations")
        if es.scrapes:
            out.append(f"  - last: running {_num(f.running)}, queued {_num(f.queued)}, "
                       f"KV usage {_pct(f.token_usage)}, prefix-cache hit {_pct(f.cache_hit_rate)}"
                       + ("" if f.spec_accept_length is None
                          else f", spec accept length {f.spec_accept_length:.2f}")
                       + ("" if f.engine_read_gbs is None
                          else f", engine's estimated read {f.engine_read_gbs:.0f} GB/s per GPU"))
    return [*out, ""]
