"""Plain-text rendering of an :class:`NcuSummary` (``perftriage kernels``
and the ``ncu`` probe's text). Kernel names are remote text: shortened by
:func:`short_name`, which sanitises them."""

from __future__ import annotations

from perftriage.core.profile.ncu import VERDICT_TEXT, NcuKernel, NcuSummary, StepRead, cut_text
from perftriage.core.profile.table import short_name
from perftriage.core.sanitize import visible


def _opt(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def ratio_text(ratio: float) -> str:
    """"1.0× the bytes it must" / "2.0× — it reads its weights twice"."""
    if ratio >= 1.5:
        return f"{ratio:.1f}× the bytes it must — it reads its weights {ratio:.0f} times" \
            if ratio >= 2.5 else f"{ratio:.1f}× — it reads its weights twice"
    if ratio < 0.8:
        return f"{ratio:.1f}× the bytes it must — less than it must: check --gpus and --steps"
    return f"{ratio:.1f}× the bytes it must"


def read_ratio_text(k: NcuKernel) -> str:
    """A kernel's :func:`ratio_text` (``--bytes``), or ""."""
    return "" if k.read_ratio is None else ratio_text(k.read_ratio)


def step_read_line(r: StepRead) -> str:
    """``moe (fused_moe_kernel): 1.0× the bytes it must (402.97 MB read per
    step, 402.65 MB of expert weights)``."""
    names = ", ".join(short_name(n) for n in r.kernels[:3])
    more = f" +{len(r.kernels) - 3}" if len(r.kernels) > 3 else ""
    na = f"; {r.na_launches} launches n/a: a lower bound" if r.na_launches else ""
    return (f"  {r.bucket} ({names}{more}): {ratio_text(r.read_ratio)} "
            f"({r.read_per_step / 1e6:.2f} MB read per step, {r.must_read / 1e6:.2f} MB of "
            f"{r.must}{na})")


def headline(s: NcuSummary) -> str:
    """``NVIDIA H200, peak 4800 GB/s: 12 kernels, 345 launches; peak from
    table: NVIDIA H200 datasheet (4.8 TB/s HBM3e)`` (the source last: it
    has parentheses of its own, never nested in ours)."""
    peak = f"peak {s.peak_gbs:g} GB/s" if s.peak_gbs else "peak unknown"
    gpu = visible(s.gpu) if s.gpu else "GPU ?"
    source = f"; peak from {visible(s.peak_source)}" if s.peak_gbs else \
        f"; {visible(s.peak_source)}"
    return f"{gpu}, {peak}: {len(s.kernels)} kernels, {s.launches} launches{source}"


def kernel_line(k: NcuKernel) -> str:
    return (f"{k.launches:>8} {k.time_us:>11.1f} {k.time_pct:>6.1f} {k.bytes / 1e6:>10.2f} "
            f"{_opt(k.gbs, '.0f'):>7} {_opt(k.pct_of_peak, '.1f'):>6} {_opt(k.dram_pct, '.1f'):>6} "
            f"{_opt(k.sm_pct, '.1f'):>6}  {VERDICT_TEXT.get(k.verdict, visible(k.verdict)):<28} "
            f"{short_name(k.name)}")


def render(s: NcuSummary, top: int | None = 20) -> str:
    lines = [headline(s), *(f"warning: {visible(w)}" for w in s.warnings), ""]
    lines.append(f"{'launches':>8} {'total us':>11} {'time%':>6} {'MB':>10} {'GB/s':>7} "
                 f"{'%peak':>6} {'dram%':>6} {'sm%':>6}  {'verdict':<28} kernel")
    shown = s.kernels if top is None else s.kernels[:top]
    lines += [kernel_line(k) for k in shown]
    if len(shown) < len(s.kernels):
        lines.append(f"… {len(s.kernels) - len(shown)} more (--top N)")
    if cut_text(s):
        lines.append(f"the host's answer: {cut_text(s)}")
    reads = [k for k in s.kernels if k.read_ratio is not None]
    if reads:
        lines += ["", "bytes it must read:"]
        lines += [f"  {short_name(k.name)}: {read_ratio_text(k)} "
                  f"({k.bytes_read / max(k.launches - k.na_launches, 1) / 1e6:.2f} MB read per launch, "
                  f"{(k.must_read or 0) / 1e6:.2f} MB needed)" for k in reads]
    if s.step_reads:
        lines += ["", "bytes a decode step must read (per GPU, from the roofline's weights):"]
        lines += [step_read_line(r) for r in s.step_reads]
    if s.na:
        lines += ["", "n/a values (launches left out of the totals): "
                  + ", ".join(f"{visible(m)} {n}" for m, n in s.na.items())]
    if s.bad:
        lines += ["", "values that are not an amount (NaN, infinite, negative or past "
                  "a petabyte, 11 days, 1000 %), launches left out of the totals: "
                  + ", ".join(f"{visible(m)} {n}" for m, n in s.bad.items())]
    if s.notes:
        lines += ["", *(f"ncu: {visible(n)}" for n in s.notes)]
    return "\n".join(lines)
