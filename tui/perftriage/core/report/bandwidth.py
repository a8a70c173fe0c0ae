"""The report's bandwidth section: the recorded ``gap.sample`` events (the
live gap, once a second) as a summary, the moments the verdict changed, and
a small time plot; or, without gap samples, the latest per-GPU counters."""

from __future__ import annotations

import statistics
from collections.abc import Callable

from perftriage.core.model.state import SessionState

SPARKS = "▁▂▃▄▅▆▇█"
PLOT_WIDTH = 60


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


def _med(samples, key: str) -> float | None:
    vals = [getattr(s, key) for s in samples if getattr(s, key) is not None]
    return statistics.median(vals) if vals else None


def _f(v: float | None, spec: str) -> str:
    return "n/a" if v is None else format(v, spec)


def bandwidth_section(state: SessionState, clock: Callable[[float | None], str]) -> list[str]:
    samples = list(state.gap_samples)
    with_counters = {n: hs.counters for n, hs in state.hosts.items() if hs.counters is not None}
    if not samples and not with_counters:
        return []
    out = ["## Memory bandwidth and the live gap", ""]
    if samples:
        last = samples[-1]
        out += [f"**{last.verdict}** (latest of {len(samples)} samples, host {last.host}, "
                f"counters: {last.source})", "",
                "| median | floor ms | measured ms | gap | DRAM GB/s | useful GB/s | traffic × | "
                "DRAM idle % |", "|---|---|---|---|---|---|---|---|",
                f"| {len(samples)} samples | {_f(_med(samples, 'floor_ms'), '.3f')} | "
                f"{_f(_med(samples, 'measured_ms'), '.3f')} | {_f(_med(samples, 'gap'), '.2f')} | "
                f"{_f(_med(samples, 'dram_bw_gbs'), '.0f')} | {_f(_med(samples, 'useful_bw_gbs'), '.0f')} | "
                f"{_f(_med(samples, 'traffic_ratio'), '.2f')} | {_f(_med(samples, 'idle_pct'), '.0f')} |",
                ""]
        changes = [s for i, s in enumerate(samples)
                   if i == 0 or s.verdict_kind != samples[i - 1].verdict_kind]
        if len(changes) > 1:
            out += ["Verdict changes:", ""]
            out += [f"- {clock(s.t)} {s.verdict}" for s in changes[:20]]
            out.append("")
        out += [f"Over time ({clock(samples[0].t)} to {clock(last.t)}):", "", "```",
                f"DRAM busy %  {spark_row([s.dram_busy_pct for s in samples], hi=100)}",
                f"traffic ×    {spark_row([s.traffic_ratio for s in samples])}",
                f"gap ×        {spark_row([s.gap for s in samples])}", "```", ""]
    for name, c in with_counters.items():
        if c.error and not c.gpus:
            out += [f"{name}: bandwidth counters n/a ({c.error}).", ""]
            continue
        rows = [f"| {g.index} | {g.name} | {_f(g.dram_bw_gbs, '.0f')} | {_f(g.dram_busy_pct, '.0f')} | "
                f"{_f(g.sm_active_pct, '.0f')} | {_f(g.tensor_active_pct, '.0f')} |" for g in c.gpus]
        out += [f"{name} ({c.source}; peak: {c.peak_source or 'unknown'}), last reading:", "",
                "| GPU | name | DRAM GB/s | DRAM % | SM active % | tensor % |",
                "|---|---|---|---|---|---|", *rows, ""]
    return out

