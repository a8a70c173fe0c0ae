"""The report's "Kernels against their roofline" section: the latest ncu
probe's kernels (achieved GB/s, share of the peak, verdict), and where the
bandwidth goes — the kernels furthest below their roofline weighted by their
share of the step (core/profile/ncu_join.py), and the bytes a decode step
must read against the recorded gap's weights (core/analysis/must_read.py)."""

from __future__ import annotations

from perftriage.core.analysis.must_read import must_read_lines
from perftriage.core.model.state import SessionState
from perftriage.core.profile.ncu import VERDICT_TEXT
from perftriage.core.profile.ncu_join import bandwidth_lines, latest_summary
from perftriage.core.profile.table import short_name
from perftriage.core.report.md_text import cell, code_cell, inline

TOP = 10


def _opt(v: float | None, spec: str, unit: str = "") -> str:
    return "n/a" if v is None else f"{v:{spec}}{unit}"


def kernels_section(state: SessionState) -> list[str]:
    got = latest_summary(state.probes.values())
    if got is None:
        return []
    probe_id, s = got
    probe = state.probes.get(probe_id)
    peak = f"peak {s.peak_gbs:g} GB/s ({s.peak_source})" if s.peak_gbs else "peak unknown"
    out = ["## Kernels against their roofline", "",
           inline(f"Nsight Compute, {probe_id} on {probe.host if probe else '?'}: "
                  f"{s.gpu or 'GPU ?'}, {peak}, {len(s.kernels)} kernels, "
                  f"{s.launches} launches."), ""]
    where = bandwidth_lines(state.probes.values(), state.profiles)
    if where is not None:
        out += ["Where the bandwidth goes:", *(f"- {inline(x)}" for x in where[1]), ""]
    must = must_read_lines(state.probes.values(), state.gaps)
    if must:
        out += [inline(must[0]), *(f"- {inline(x.strip())}" for x in must[1:]), ""]
    out += ["| kernel | launches | time share | GB/s | % of peak | verdict |",
            "|---|---:|---:|---:|---:|---|"]
    for k in s.kernels[:TOP]:
        out.append(f"| {code_cell(short_name(k.name, 80))} | {k.launches} | {k.time_pct:.1f} % "
                   f"| {_opt(k.gbs, '.0f')} | {_opt(k.pct_of_peak, '.1f', ' %')} "
                   f"| {cell(VERDICT_TEXT.get(k.verdict, k.verdict))} |")
    return out + [""]
