"""The report's bandwidth section: the recorded ``gap.sample`` events (the
live gap, once a second) per host, as debounced verdict spans with their
median figures and a small time plot; and the latest per-GPU counters."""

from __future__ import annotations

import statistics
from collections.abc import Callable

from perftriage.core.analysis.verdict_spans import HOLD_S, VerdictSpan, spans_by_host
from perftriage.core.model.state import SessionState
from perftriage.core.report.md_text import cell, inline

SPARKS = "▁▂▃▄▅▆▇█"
PLOT_WIDTH = 60
MAX_SPANS = 20  # per host: the latest ones


def spark_row(values: list[float | None], width: int = PLOT_WIDTH, hi: float | None = None) -> str:
    """Values binned to ``width`` columns (mean per bin), one block each; ' ' where none."""
    if not values:
        return ""
    n = min(width, len(values))
    got = [v for v in values if v is not None]
    top = hi or (max(got) if got else 1.0) or 1.0
    out = []
    for i in range(n):
        chunk = [v for v in values[i * len(values) // n:(i + 1) * len(values) // n] if v is not None]
        if not chunk:
            out.append(" ")
            continue
        level = min(1.0, max(0.0, statistics.fmean(chunk) / top))
        out.append(SPARKS[round(level * (len(SPARKS) - 1))])
    return "".join(out)


def _f(v: float | None, spec: str) -> str:
    return "n/a" if v is None else format(v, spec)


def _host_gap_lines(host: str, spans: list[VerdictSpan],
                    clock: Callable[[float | None], str], headline: str | None) -> list[str]:
    """One host's live gap: its verdict spans (a verdict counts once it has
    held a few seconds) with the median figures of each, and a time plot."""
    rows = [s for span in spans for s in span.samples]
    last = spans[-1]
    # the headline is the triage's dominant finding over the steady phases, never the
    # verdict of the last seconds (a stopped server reads "0 GB/s ... stale")
    out = [f"### {inline(host)}: **{inline(headline or last.verdict)}**", "",
           f"{len(rows)} samples, counters: {inline(rows[-1].source)}; "
           f"{len(spans)} verdict span{'s' if len(spans) > 1 else ''} "
           f"(a verdict changes once it has held {HOLD_S:g} s).", "",
           "| from | to | verdict | samples | floor ms | measured ms | gap | DRAM GB/s | "
           "useful GB/s | traffic × | DRAM idle % |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for span in spans[-MAX_SPANS:]:
        m = span.medians()
        out.append(f"| {clock(span.start_t)} | {clock(span.end_t)} | {span.verdict_kind} | "
                   f"{len(span.samples)} | {_f(m['floor_ms'], '.3f')} | "
                   f"{_f(m['measured_ms'], '.3f')} | {_f(m['gap'], '.2f')} | "
                   f"{_f(m['dram_bw_gbs'], '.0f')} | {_f(m['useful_bw_gbs'], '.0f')} | "
                   f"{_f(m['traffic_ratio'], '.2f')} | {_f(m['idle_pct'], '.0f')} |")
    if len(spans) > MAX_SPANS:
        out.append(f"| … | | {len(spans) - MAX_SPANS} earlier spans left out | | | | | | | | |")
    out += ["", *[f"- {clock(span.start_t)}–{clock(span.end_t)}: {span.verdict}"
                  for span in spans[-MAX_SPANS:]], ""]
    out += [f"Over time ({clock(rows[0].t)} to {clock(rows[-1].t)}):", "", "```",
            f"DRAM busy %  {spark_row([s.dram_busy_pct for s in rows], hi=100)}",
            f"traffic ×    {spark_row([s.traffic_ratio for s in rows])}",
            f"gap ×        {spark_row([s.gap for s in rows])}", "```", ""]
    return out


def bandwidth_section(state: SessionState, clock: Callable[[float | None], str],
                      headline: Callable[[str], str | None] = lambda _h: None) -> list[str]:
    samples = list(state.gap_samples)
    with_counters = {n: hs.counters for n, hs in state.hosts.items() if hs.counters is not None}
    if not samples and not with_counters:
        return []
    out = ["## Memory bandwidth and the live gap", ""]
    for host, spans in spans_by_host(samples).items():
        out += _host_gap_lines(host, spans, clock, headline(host))
    for name, c in with_counters.items():
        if c.error and not c.gpus:
            out += [f"{inline(name)}: bandwidth counters n/a ({inline(c.error)}).", ""]
            continue
        rows = [f"| {g.index} | {cell(g.name)} | {_f(g.dram_bw_gbs, '.0f')} | {_f(g.dram_busy_pct, '.0f')} | "
                f"{_f(g.sm_active_pct, '.0f')} | {_f(g.tensor_active_pct, '.0f')} |" for g in c.gpus]
        out += [f"{inline(name)} ({inline(c.source)}; peak: {inline(c.peak_source or 'unknown')}), "
                "last reading:", "",
                "| GPU | name | DRAM GB/s | DRAM % | SM active % | tensor % |",
                "|---|---|---|---|---|---|", *rows, ""]
    return out

