"""The report's bandwidth section: the recorded ``gap.sample`` events (the
live gap, once a second) per host, as figures per phase of the triage (the
phases of "What's wrong": the medians of each figure over the phase, beside
the cause the triage puts first there) with a small time plot; and the
latest per-GPU counters. The gap measures, the triage judges: no cause is
decided here. A host of the same machine as another (the same GPU UUIDs)
keeps its own figures (another counter path reads the same GPU) beside the
phases and causes of that machine's triage, which speaks for it once."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from perftriage.core.model.state import SessionState
from perftriage.core.report.md_text import cell, inline
from perftriage.core.triage.phase import Phase

SPARKS = "▁▂▃▄▅▆▇█"
PLOT_WIDTH = 60
MAX_SPANS = 20  # phases per host: the latest ones


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


MEDIAN_KEYS = ("floor_ms", "measured_ms", "gap", "dram_bw_gbs", "useful_bw_gbs",
               "traffic_ratio", "idle_pct")


def _median(rows: Sequence[Any], key: str) -> float | None:
    values = [v for s in rows if (v := getattr(s, key, None)) is not None]
    return statistics.median(values) if values else None


def _quality(rows: Sequence[Any]) -> str:
    """The counters' quality over the rows: ``ok``, else each other kind with
    its count of samples (``stuck 3``)."""
    counts: dict[str, int] = {}
    for s in rows:
        q = getattr(s, "counter_quality", "") or "ok"
        counts[q] = counts.get(q, 0) + 1
    bad = [f"{q} {n}" for q, n in counts.items() if q != "ok"]
    return ", ".join(bad) if bad else "ok"


def _windows(host: str, rows: list[Any], phases: Sequence[Phase]
             ) -> list[tuple[float, float, str, list[Any]]]:
    """(from, to, the triage's top cause, the samples) per phase of ``host``;
    one window over every sample when the triage has no phase of the host."""
    mine = [p for p in phases if p.host == host]
    if not mine:
        return [(rows[0].t, rows[-1].t, "", rows)]
    out = []
    for i, p in enumerate(mine):
        last = i == len(mine) - 1
        got = [s for s in rows if p.start <= s.t and (s.t < p.end or (last and s.t <= p.end))]
        top = p.top.cause if p.top is not None else "nothing found"  # the one top()
        out.append((p.start, p.end, top, got))
    return out


def _host_gap_lines(host: str, rows: list[Any], phases: Sequence[Phase],
                    clock: Callable[[float | None], str], headline: str | None,
                    machine: str) -> list[str]:
    """One host's live gap: its figures per phase of the triage of its
    ``machine`` (the host itself, or the host of the same machine the triage
    names) (medians over the phase) and a time plot."""
    windows = _windows(machine, rows, phases)
    # the headline is the triage's dominant finding over the steady phases (Markdown-safe:
    # triage_section.headline escapes it)
    same = f" (the same machine as {inline(machine)})" if machine != host else ""
    title = f"### {inline(host)}{same}" + (f": **{headline}**" if headline else "")
    out = [title, "",
           f"{len(rows)} samples, counters: {inline(rows[-1].source)}; figures per phase of "
           "the triage (medians over the phase); the cause is the triage's (What's wrong).", "",
           "| from | to | triage's top | samples | floor ms | measured ms | gap | DRAM GB/s | "
           "useful GB/s | traffic × | DRAM idle % | counters |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    shown = windows[-MAX_SPANS:]
    for start, end, top, got in shown:
        m = {k: _median(got, k) for k in MEDIAN_KEYS}
        out.append(f"| {clock(start)} | {clock(end)} | {inline(top) or '—'} | {len(got)} | "
                   f"{_f(m['floor_ms'], '.3f')} | {_f(m['measured_ms'], '.3f')} | "
                   f"{_f(m['gap'], '.2f')} | {_f(m['dram_bw_gbs'], '.0f')} | "
                   f"{_f(m['useful_bw_gbs'], '.0f')} | {_f(m['traffic_ratio'], '.2f')} | "
                   f"{_f(m['idle_pct'], '.0f')} | {_quality(got)} |")
    if len(windows) > MAX_SPANS:
        out.append(f"| … | | {len(windows) - MAX_SPANS} earlier phases left out "
                   "| | | | | | | | | |")
    notes = [(start, end, note) for start, end, _, got in shown
             if got and (note := getattr(got[-1], "note", ""))]
    if notes:
        out += ["", *[f"- {clock(start)}–{clock(end)}: {inline(note)}"
                      for start, end, note in notes]]
    out += ["", f"Over time ({clock(rows[0].t)} to {clock(rows[-1].t)}):", "", "```",
            f"DRAM busy %  {spark_row([s.dram_busy_pct for s in rows], hi=100)}",
            f"traffic ×    {spark_row([s.traffic_ratio for s in rows])}",
            f"gap ×        {spark_row([s.gap for s in rows])}", "```", ""]
    return out


def bandwidth_section(state: SessionState, clock: Callable[[float | None], str],
                      headline: Callable[[str], str | None] = lambda _h: None,
                      phases: Sequence[Phase] = (),
                      same_machine: Mapping[str, str] | None = None) -> list[str]:
    """``phases``: the recording's triage (the report's "What's wrong");
    ``same_machine``: host -> the host the triage names its machine
    (:func:`~perftriage.core.triage.same_machine.aliases`)."""
    machine = same_machine or {}
    samples = list(state.gap_samples)
    with_counters = {n: hs.counters for n, hs in state.hosts.items() if hs.counters is not None}
    if not samples and not with_counters:
        return []
    out = ["## Memory bandwidth and the live gap", ""]
    per_host: dict[str, list[Any]] = {}
    for sample in samples:
        per_host.setdefault(sample.host, []).append(sample)
    for host, rows in per_host.items():
        of = machine.get(host, host)
        out += _host_gap_lines(host, rows, phases, clock, headline(of), of)
    for name, c in with_counters.items():
        if c.error and not c.gpus:
            out += [f"{inline(name)}: bandwidth counters n/a ({inline(c.error)}).", ""]
            continue
        rows = _gpu_rows(c.gpus)
        out += [f"{inline(name)} ({inline(c.source)}; peak: {inline(c.peak_source or 'unknown')}), "
                "last reading:", "",
                "| GPU | name | DRAM GB/s | DRAM % | SM active % | tensor % |",
                "|---|---|---|---|---|---|", *rows, ""]
    return out


AGREE_PCT = 5.0  # GPUs whose DRAM busy shares are within this many points: one row


def _span(values: list[float | None]) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return "n/a"
    lo, hi = f"{min(got):.0f}", f"{max(got):.0f}"
    return lo if lo == hi else f"{lo}–{hi}"


def _gpu_rows(gpus: list) -> list[str]:
    """One row per GPU; GPUs of one name that agree (DRAM busy within
    :data:`AGREE_PCT` points) are one row with their ranges."""
    busy = [g.dram_busy_pct for g in gpus]
    if (len(gpus) > 2 and len({g.name for g in gpus}) == 1 and None not in busy
            and max(busy) - min(busy) <= AGREE_PCT):
        first, last = gpus[0].index, gpus[-1].index
        return [f"| {first}–{last} (all {len(gpus)} alike) | {cell(gpus[0].name)} | "
                f"{_span([g.dram_bw_gbs for g in gpus])} | {_span(busy)} | "
                f"{_span([g.sm_active_pct for g in gpus])} | "
                f"{_span([g.tensor_active_pct for g in gpus])} |"]
    return [f"| {g.index} | {cell(g.name)} | {_f(g.dram_bw_gbs, '.0f')} | {_f(g.dram_busy_pct, '.0f')} | "
            f"{_f(g.sm_active_pct, '.0f')} | {_f(g.tensor_active_pct, '.0f')} |" for g in gpus]
