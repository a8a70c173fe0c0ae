"""How an engine's /metrics is drawn: a one-line strip and a latency heatmap.

Pure (Rich text only, no Textual), so widgets stay thin and tests can look
at the exact cells.

The heatmap is a spectrogram of the inter-token latency histogram, as lnav
draws one: time runs left to right (one column per scrape interval, newest
at the right), latency bottom to top on a log scale, and each cell's shade
is how many tokens of that interval landed in that latency band, relative to
the busiest cell of the same column. The p50 and p99 of each interval are
marked in their cells (``•`` and ``▴``), so the percentile lines read as a
time plot drawn over the distribution.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.style import Style
from rich.text import Text

from perftriage.core.model.engine_state import EngineState, LatencyRow
from perftriage.core.sanitize import visible

# shades from empty to full (dark blue to yellow, readable on dark and light)
SHADES = ("#1b2440", "#243a6b", "#2f6b8f", "#3f9a8a", "#78bf5e", "#c8d84a", "#ffe14d")
EMPTY = Style(bgcolor="grey11")
P50_MARK, P99_MARK = "•", "▴"
LABEL_WIDTH = 7


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    ms = seconds * 1000
    return f"{ms:.0f}" if ms >= 10 else f"{ms:.1f}"


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{x * 100:.0f}%"


def _num(x: float | None, spec: str = ".0f") -> str:
    return "–" if x is None else format(x, spec)


def strip_text(es: EngineState) -> Text:
    """One line: the engine's state, or its headline figures over the last window."""
    head = Text(f"{visible(es.source)} ", style="bold", no_wrap=True, overflow="ellipsis")
    if es.conn_state != "up" or es.latest is None:
        reason = f": {visible(es.reason)}" if es.reason else ""
        style = "red" if es.conn_state == "down" else "yellow"
        return head + Text(f"{es.conn_state}{reason}", style=style)
    f = es.figures
    parts = [f"{f.engine or '?'}"]  # what matters most first: a narrow pane cuts the end
    if f.itl_s.p50 is not None:
        parts.append(f"ITL p50/p99 {_ms(f.itl_s.p50)}/{_ms(f.itl_s.p99)} ms")
    if es.ms_per_token is not None:
        parts.append(f"{es.ms_per_token:.1f} ms/tok")
    parts += [f"gen {_num(f.gen_tps)} tok/s", f"run {_num(f.running)}", f"q {_num(f.queued)}",
              f"KV {_pct(f.token_usage)}"]
    if f.ttft_s.p90 is not None:
        parts.append(f"TTFT p90 {_ms(f.ttft_s.p90)} ms")
    if f.cache_hit_rate is not None:
        parts.append(f"hit {_pct(f.cache_hit_rate)}")
    if f.spec_accept_length is not None:
        parts.append(f"accept {f.spec_accept_length:.2f}")
    if f.engine_read_gbs is not None:  # the engine's own estimate of its memory reads
        parts.append(f"est. read {f.engine_read_gbs:.0f} GB/s/GPU")
    if f.preemptions:
        parts.append(f"preempted {f.preemptions:.0f}")
    ranks = es.latest.ranks
    if len({(r.running, r.queued) for r in ranks}) > 1:  # ranks that disagree: say which
        parts.append("run by " + " ".join(
            f"{','.join(f'{k}={v}' for k, v in r.labels.items())}:{_num(r.running)}"
            for r in ranks))
    return head + Text(" · ".join(parts))


def _band_edges(rows: Sequence[LatencyRow], height: int) -> list[float]:
    """``height + 1`` log-spaced edges covering the buckets that saw tokens."""
    lo, hi = math.inf, 0.0
    for row in rows:
        bounds = row.bounds
        for i, count in enumerate(row.counts):
            if count <= 0:
                continue
            upper = bounds[i] if i < len(bounds) else bounds[-1] * 2 if bounds else 1.0
            lower = bounds[i - 1] if 0 < i <= len(bounds) else upper / 2
            lo, hi = min(lo, max(lower, 1e-4)), max(hi, upper)
    if hi <= 0 or not math.isfinite(lo):
        return []
    if hi <= lo:
        hi = lo * 2
    step = (math.log(hi) - math.log(lo)) / height
    return [math.exp(math.log(lo) + k * step) for k in range(height + 1)]


def _band_of(value: float, edges: Sequence[float]) -> int:
    for k in range(1, len(edges)):
        if value <= edges[k] * (1 + 1e-9):
            return k - 1
    return len(edges) - 2


def _column(row: LatencyRow, edges: Sequence[float]) -> list[float]:
    bands = [0.0] * (len(edges) - 1)
    bounds = row.bounds
    for i, count in enumerate(row.counts):
        if count <= 0:
            continue
        upper = bounds[i] if i < len(bounds) else math.inf
        lower = bounds[i - 1] if i > 0 else 0.0
        if math.isinf(upper):
            bands[-1] += count
            continue
        middle = math.sqrt(max(lower, upper / 2) * upper)  # the bucket's geometric middle
        bands[_band_of(middle, edges)] += count
    return bands


def heatmap_lines(rows: Sequence[LatencyRow], width: int, height: int) -> list[Text]:
    """``height`` lines of ``LABEL_WIDTH + width`` cells (newest interval at the
    right); a single line saying why when there is nothing to draw."""
    if width <= 0 or height <= 0:
        return []
    rows = [r for r in rows if sum(r.counts) > 0][-width:]
    edges = _band_edges(rows, height) if rows else []
    if not edges:
        return [Text("inter-token latency: no decode steps yet", style="dim")]
    columns = [_column(r, edges) for r in rows]
    pad = width - len(columns)
    lines = []
    for band in reversed(range(height)):  # top line = highest latency
        label = f"{_ms(edges[band + 1])}ms" if band in (height - 1, 0) or band == height // 2 \
            else ""
        line = Text()
        line.append(f"{label:>{LABEL_WIDTH - 1}} ", style="dim")
        line.append(" " * pad, style=EMPTY)
        for row, col in zip(rows, columns):
            peak = max(col) or 1.0
            value = col[band]
            style = EMPTY if value <= 0 else Style(
                bgcolor=SHADES[min(len(SHADES) - 1, int(value / peak * (len(SHADES) - 1) + 0.5))])
            mark = " "
            if row.p99 is not None and _band_of(row.p99, edges) == band:
                mark = P99_MARK
            if row.p50 is not None and _band_of(row.p50, edges) == band:
                mark = P50_MARK
            line.append(mark, style=style + Style(color="white", bold=True))
        lines.append(line)
    return lines


def heatmap_title(es: EngineState) -> Text:
    last = es.itl_rows[-1] if es.itl_rows else None
    text = Text("inter-token latency ", style="bold", no_wrap=True, overflow="ellipsis")
    if last is None:
        return text
    return text + Text(f"{P50_MARK} p50 {_ms(last.p50)} ms  {P99_MARK} p99 {_ms(last.p99)} ms · "
                       f"a column per scrape, shade: tokens per band", style="dim")
