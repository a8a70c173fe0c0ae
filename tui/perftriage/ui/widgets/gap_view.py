"""The Gap view inside the G panel: the live gap of one host, updated each
second from the session state with :func:`perftriage.core.analysis.gap_live.live_gap`
(the same arithmetic as the recorded ``gap.sample`` events and ``perftriage gap``).

Shows floor, measured and gap; three witnesses of the traffic (achieved
DRAM, useful, the engine's own estimate) and the achieved/useful ratio; DRAM
idle share; NVLink against its capacity; one bar per GPU with the GPU that
deviates from the others marked; what the counters are worth (stuck, none,
inconsistent, witnesses that disagree); the triage's top finding (the gap
measures, the triage judges); and, with an ``ncu``
probe's result, where the bandwidth goes: the kernels furthest below their
roofline weighted by their share of the step, and the bytes a decode step
must read against the recorded gap's weights (core/analysis/must_read.py).
"""

from __future__ import annotations

from typing import ClassVar

from textual.content import Content
from textual.widgets import Static

from perftriage.core.analysis.gap import GapResult
from perftriage.core.analysis.gap_live import counters_host, live_gap
from perftriage.core.analysis.must_read import must_read_lines
from perftriage.core.profile.ncu_join import bandwidth_lines
from perftriage.core.view.baseline_view import GAP_METRICS
from perftriage.ui.app_context import app_context
from perftriage.ui.widgets.baseline_text import baseline_lines
from perftriage.core.model.state import Section, SessionState
from perftriage.ui.widgets.format import bar, markup, text_lines
from perftriage.ui.widgets.status_style import STATUS_VAR, threshold
from perftriage.ui.widgets.triage_text import verdict_text

QUALITY_STATUS = {"stuck": "failed", "none": "testing", "inconsistent": "testing"}


def _v(x: float | None, spec: str, unit: str = "") -> str:
    return "n/a" if x is None else f"{format(x, spec)}{unit}"


def gap_lines(r: GapResult | None, host: str | None, per_gpu_peak: dict[int, float] | None = None,
              why: str = "") -> list[Content | str]:
    """``why``: why this host (``where server s runs``), said beside its name.
    A str line is markup written here; remote text comes as Content."""
    if r is None or host is None:
        return ["[b]live gap[/b]  [$text-muted]no bandwidth counters yet (NVML GPM locally, "
                "nvidia-smi dmon on remote hosts)[/]"]
    head = markup("[b]live gap[/b] · $host" + (" ($why)" if why else "")
                  + f" · {r.source}  [$text-muted]updates each second[/]", host=host, why=why)
    lines: list[Content | str] = [head]
    if r.error and r.dram_busy_pct is None:
        lines.append(markup("counters n/a: $error", error=r.error))
    gap = _v(r.gap, ".2f", "×")
    lines.append(f"floor {_v(r.floor_ms, '.3f', ' ms')}   measured {_v(r.measured_ms, '.3f', ' ' + r.ms_label)}"
                 f"   gap [b]{gap}[/b]")
    peak = f" of {r.peak_gbs:.0f}" if r.peak_gbs else ""
    lines.append(f"DRAM achieved {_v(r.dram_bw_gbs, '.0f', ' GB/s')} ({_v(r.dram_busy_pct, '.0f', ' %')}{peak})"
                 f"   useful {_v(r.useful_bw_gbs, '.0f', ' GB/s')}"
                 f"   traffic [b]{_v(r.traffic_ratio, '.2f', '×')}[/b]")
    link = "n/a" if r.nvlink_pct is None else f"{r.nvlink_pct:.0f} % of capacity"
    # the third witness: the engine's own estimate of what it reads per GPU
    lines.append(f"DRAM idle {_v(r.idle_pct, '.0f', ' %')}   NVLink {link}"
                 + (f"   batch {r.batch}" if r.batch else "")
                 + f"   engine est. {_v(r.engine_read_gbs, '.0f', ' GB/s')}")
    lines += gpu_lines(r)
    if r.note:  # what the figures are worth: never a cause (the triage's line below)
        status = QUALITY_STATUS.get(r.counter_quality, "open")
        lines.append(Content("counters: ") + markup(
            f"[{STATUS_VAR.get(status, '$text')}]$note[/]", note=r.note))
    return lines


AGREE_PCT = 5.0  # GPUs whose DRAM busy shares are within this many points read as one line


def _span(values: list[float | None], spec: str, unit: str) -> str:
    got = [v for v in values if v is not None]
    if not got:
        return "n/a"
    lo, hi = format(min(got), spec).strip(), format(max(got), spec).strip()
    return f"{lo}{unit}" if lo == hi else f"{lo}–{hi}{unit}"


def gpu_lines(r: GapResult) -> list[str]:
    """One bar per GPU; GPUs that agree (no outlier, DRAM busy within
    :data:`AGREE_PCT` points) fold into one line with their ranges, so the
    G form keeps its fields on a 30-row terminal."""
    busy = [g.dram_busy_pct for g in r.gpus]
    known = [b for b in busy if b is not None]
    if (len(r.gpus) > 2 and r.slowest_gpu is None and len(known) == len(busy)
            and max(known) - min(known) <= AGREE_PCT):
        mid = sorted(known)[len(known) // 2]
        first, last = r.gpus[0].index, r.gpus[-1].index
        return [f" GPU{first}–{last} DRAM [{threshold(mid, 60, 85)}]{bar(mid, 12)}[/] "
                f"{_span(busy, '.0f', '%')}  {_span([g.dram_bw_gbs for g in r.gpus], '.0f', ' GB/s')}"
                f"  SM {_span([g.sm_active_pct for g in r.gpus], '.0f', '%')}"
                f"  [$text-muted]({len(r.gpus)} GPUs alike)[/]"]
    out = []
    for g in r.gpus:
        col = threshold(g.dram_busy_pct, 60, 85)
        mark = f"  ◀ outlier ({r.outlier_side})" if r.slowest_gpu == g.index else ""
        out.append(f" GPU{g.index} DRAM [{col}]{bar(g.dram_busy_pct, 12)}[/] {_v(g.dram_busy_pct, '3.0f', '%')}"
                   f"  {_v(g.dram_bw_gbs, '5.0f', ' GB/s')}  SM {_v(g.sm_active_pct, '3.0f', '%')}{mark}")
    return out


class GapView(Static):
    """Re-renders from the live session state when what the live gap reads
    changes (counters, logs, engines, gaps: the app's refresh path), and on demand."""

    SECTIONS: ClassVar[frozenset[Section]] = frozenset(
        {Section.HOSTS, Section.GAPS, Section.LOGS, Section.ENGINES, Section.PROBES,
         Section.PROFILES, Section.BASELINE, Section.TRIAGE})

    DEFAULT_CSS = "GapView { height: auto; padding: 1 0 0 0; }"

    def __init__(self, state: SessionState, host: str | None = None, why: str = "",
                 **kwargs) -> None:
        super().__init__("", **kwargs)
        self.session_state = state
        self.host = host  # preferred (the server's host, else the selected one)
        self.why = why  # said beside it: why that host
        self.inputs: dict | None = None  # the form's inputs while they are valid

    def on_mount(self) -> None:
        app_context(self).refresher.watch(self)

    def show_state(self, state: SessionState) -> None:
        self.refresh_gap()

    def refresh_gap(self) -> None:
        host = counters_host(self.session_state, self.host)
        r = live_gap(self.session_state, host, self.inputs) if host else None
        lines = gap_lines(r, host, why=self.why if host == self.host else "")
        if host is not None and r is not None:
            # the verdict is the triage's top finding (the main screen's line says the same)
            lines.append(Content.from_rich_text(verdict_text(self.session_state, host))
                         if host in self.session_state.triage else
                         "verdict: [$text-muted]the triage has not evaluated this host yet[/]")
        lines += where_lines(self.session_state)
        lines += baseline_lines(self, self.session_state, GAP_METRICS, host)
        self.update(text_lines(lines))


def where_lines(state: SessionState) -> list[Content]:
    """Where the bandwidth goes, per kernel, from the latest ncu probe (joined
    with the latest profile capture for the time shares); nothing without one."""
    got = bandwidth_lines(state.probes.values(), state.profiles)
    if got is None:
        return []
    probe_id, lines = got
    must = must_read_lines(state.probes.values(), state.gaps)
    return [markup("[b]where the bandwidth goes[/b]  [$text-muted]ncu $probe[/]", probe=probe_id),
            *(markup(" $x", x=x) for x in [*lines, *must])]
