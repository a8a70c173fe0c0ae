"""The gap between the bandwidth floor and the measured ms/token, in figures.

Inputs: the bytes one decode step must read (weights, or active params x
bits, plus KV), the measured token rate and batch size (from the log), and
per-GPU GPM counters (DRAM bandwidth utilisation, NVLink rx/tx). Out comes
one :class:`GapResult`: the floor, the measured per-request ms/token, the gap,
achieved vs useful bandwidth per GPU (their ratio says how much of the DRAM
traffic a token did not need), the DRAM idle share, NVLink against its
capacity, the GPU that deviates from the others, and how far the counters
can be trusted (``counter_quality``: ok, stuck, none, inconsistent).

The gap measures; it does not judge. What the figures mean (near the floor,
wasted traffic, a GPU that idles) is the triage's to say
(:mod:`perftriage.core.triage`), with its own thresholds and the other
witnesses beside it: one judge, so the gap and the triage cannot disagree.

Useful bandwidth per GPU = bytes per step x steps/s / GPUs, where a step
produces one token for each running request (steps/s = tokens/s / batch),
or ``accept_len`` tokens with speculative decoding (steps/s = tokens/s /
(batch x accept_len); measured time is then per step, labelled ``ms/step``).
The engine's own read estimate is the third witness
(:mod:`~perftriage.core.analysis.witnesses`): a disagreement above 1.5x
is said in ``note``.
Pure arithmetic: ``perftriage gap``, the Gap view and the recorded
``gap.sample`` events all come from :func:`compute`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from statistics import mean
from typing import Any, Literal

from perftriage.core.analysis.gpu_outlier import deviating_gpu
from perftriage.core.analysis.witnesses import disagreement

SPREAD_PCT = 15.0  # DRAM busy differs this much between GPUs: one GPU lags
TOO_LITTLE = 0.7  # DRAM moved less than this share of the useful bytes: inputs disagree

# how far the counters can be trusted (``counter_quality``)
CounterQuality = Literal["ok", "stuck", "none", "inconsistent"]


@dataclass
class GpuGap:
    index: int
    name: str = ""
    dram_bw_gbs: float | None = None
    dram_busy_pct: float | None = None
    sm_active_pct: float | None = None


@dataclass
class GapResult:
    floor_ms: float | None
    measured_ms: float | None
    gap: float | None
    peak_gbs: float | None
    dram_bw_gbs: float | None
    dram_busy_pct: float | None
    useful_bw_gbs: float | None
    traffic_ratio: float | None
    idle_pct: float | None
    gpus: list[GpuGap] = field(default_factory=list)
    source: str = "unavailable"
    # the engine's own estimate of read GB/s per GPU (log or /metrics): the third witness
    engine_read_gbs: float | None = None
    # beyond the documented --json keys
    counter_quality: CounterQuality = "ok"
    # the figures' caveats in words (counters not trusted, witnesses that disagree,
    # the GPU that deviates): never a cause, never advice (the triage's)
    note: str = ""
    tokens_per_s: float | None = None
    nvlink_pct: float | None = None
    batch: int | None = None
    slowest_gpu: int | None = None  # the GPU whose DRAM busy deviates (by MAD)
    outlier_side: str = ""  # "low" / "high": which way slowest_gpu deviates
    ms_label: str = "ms/tok@bs1"
    error: str | None = None
    accept_len: float | None = None  # tokens per decode step (speculative decoding)
    disagreement: str | None = None  # the pair of witnesses more than 1.5x apart

    def public(self) -> dict[str, Any]:
        """The ``perftriage gap --json`` object, documented keys first."""
        return asdict(self)

    def event_fields(self) -> dict[str, Any]:
        """Keyword arguments for a :class:`GapSample` event."""
        d = asdict(self)
        for k in ("gpus", "ms_label", "error"):
            d.pop(k)
        return d


def _r(x: float | None, nd: int = 2) -> float | None:
    return None if x is None else round(x, nd)


def _mean(values) -> float | None:
    got = [v for v in values if v is not None]
    return mean(got) if got else None


def compute(
    *,
    bytes_gb: float | None,
    counters: list[Any],
    peak_gbs: float | None,
    n_gpus: int | None = None,
    tokens_per_s: float | None = None,
    batch: int | None = None,
    nvlink_capacity_gbs: float | None = None,
    source: str = "unavailable",
    error: str | None = None,
    engine_read_gbs: float | None = None,
    accept_len: float | None = None,
) -> GapResult:
    """``counters``: objects with ``index``, ``name``, ``dram_busy_pct``,
    ``dram_bw_gbs``, ``sm_active_pct``, ``nvlink_rx_gbs``, ``nvlink_tx_gbs``
    (GpuCounters events). ``peak_gbs`` is per GPU; ``n_gpus`` defaults to
    the GPUs counted. ``nvlink_capacity_gbs`` is per GPU and direction.
    ``engine_read_gbs``: the engine's own read estimate per GPU; ``accept_len``:
    tokens per step with speculative decoding (the floor is per step then)."""
    gpus_n = n_gpus or len(counters) or 1
    bs = batch if batch and batch > 1 else 1
    per_step = accept_len if accept_len and accept_len > 0 else 1.0  # tokens a step yields
    floor_ms = bytes_gb / (peak_gbs * gpus_n) * 1000.0 if bytes_gb and peak_gbs else None
    measured_ms = 1000.0 * bs * per_step / tokens_per_s if tokens_per_s else None
    gap = measured_ms / floor_ms if measured_ms and floor_ms else None
    useful = (bytes_gb * (tokens_per_s / (bs * per_step)) / gpus_n
              if bytes_gb and tokens_per_s else None)

    per_gpu = [GpuGap(index=c.index, name=getattr(c, "name", "") or "",
                      dram_bw_gbs=_r(c.dram_bw_gbs, 1), dram_busy_pct=_r(c.dram_busy_pct, 1),
                      sm_active_pct=_r(c.sm_active_pct, 1)) for c in counters]
    busy = _mean(c.dram_busy_pct for c in counters)
    achieved = _mean(c.dram_bw_gbs for c in counters)
    if achieved is None and busy is not None and peak_gbs:
        achieved = busy / 100.0 * peak_gbs
    ratio = achieved / useful if achieved is not None and useful else None
    idle = 100.0 - busy if busy is not None else None
    links = [max(c.nvlink_rx_gbs or 0.0, c.nvlink_tx_gbs or 0.0) for c in counters
             if c.nvlink_rx_gbs is not None or c.nvlink_tx_gbs is not None]
    nvlink_pct = (max(links) / nvlink_capacity_gbs * 100.0
                  if links and nvlink_capacity_gbs else None)
    measured = [c for c in counters if c.dram_busy_pct is not None]
    odd = deviating_gpu({c.index: c.dram_busy_pct for c in measured}, SPREAD_PCT)
    unit = "ms/step" if per_step != 1.0 else "ms/tok"
    label = f"{unit}@bs1" if bs == 1 else f"{unit}/req@bs{bs}"
    result = GapResult(
        floor_ms=_r(floor_ms, 3), measured_ms=_r(measured_ms, 3), gap=_r(gap, 2),
        peak_gbs=_r(peak_gbs, 1), dram_bw_gbs=_r(achieved, 1), dram_busy_pct=_r(busy, 1),
        useful_bw_gbs=_r(useful, 1), traffic_ratio=_r(ratio, 2), idle_pct=_r(idle, 1),
        gpus=per_gpu, source=source, tokens_per_s=_r(tokens_per_s, 2),
        nvlink_pct=_r(nvlink_pct, 1), batch=bs if tokens_per_s else batch,
        slowest_gpu=odd.index if odd else None, outlier_side=odd.side if odd else "",
        ms_label=label, error=error,
        engine_read_gbs=_r(engine_read_gbs, 1), accept_len=_r(accept_len, 2),
    )
    result.counter_quality, words = quality(result, counters)
    notes = [words] if words else []
    split = disagreement(achieved, useful, engine_read_gbs)
    if split is not None and result.counter_quality != "stuck":
        result.disagreement = split.pair
        notes.append(f"witnesses disagree ({split.pair} {split.ratio:.1f}x): {split.words}")
    if result.counter_quality in ("ok", "inconsistent"):
        notes.append(spread_words(result))
    result.note = "; ".join(n for n in notes if n)
    return result


def quality(r: GapResult, counters: Sequence[Any] = ()) -> tuple[CounterQuality, str]:
    """How far the counters can be trusted, and why not in words ("" when ok)."""
    stuck = [c.index for c in counters if getattr(c, "stuck", False)]
    if stuck:
        return "stuck", (f"GPM counters read 0 on GPU {', '.join(map(str, stuck))} while it is "
                         "busy: not trusted (another profiler may hold them)")
    if r.dram_busy_pct is None:
        return "none", "no bandwidth counters" + (f" ({r.error})" if r.error else "")
    if r.traffic_ratio is not None and r.traffic_ratio < TOO_LITTLE:
        return "inconsistent", (
            f"DRAM moved {r.dram_bw_gbs:.0f} GB/s but the token rate needs {r.useful_bw_gbs:.0f}: "
            "the token rate is stale (server idle?) or the bytes per token are too high")
    return "ok", ""


def spread_words(r: GapResult) -> str:
    """The GPU that deviates, and which way; or, with no single one, that
    the GPUs disagree (two GPUs apart, or a spread without one odd GPU)."""
    busy = {g.index: g.dram_busy_pct for g in r.gpus if g.dram_busy_pct is not None}
    if len(busy) < 2 or max(busy.values()) - min(busy.values()) < SPREAD_PCT:
        return ""
    odd = deviating_gpu(busy, SPREAD_PCT)
    if odd is not None:
        way = "below" if odd.side == "low" else "above"
        return (f"GPU {odd.index} deviates: DRAM {odd.value:.0f} % busy, "
                f"{odd.points:.0f} points {way} the median {odd.median:.0f} % of {len(busy)} GPUs")
    lo, hi = min(busy, key=busy.__getitem__), max(busy, key=busy.__getitem__)
    return (f"the GPUs disagree: DRAM {busy[hi]:.0f} % busy on GPU {hi}, "
            f"{busy[lo]:.0f} % on GPU {lo}")


def nvlink_capacity_gbs(links: int | None, per_link_gbs: float | None) -> float | None:
    """Per GPU and direction: links x per-link speed (``nvidia-smi nvlink -s``)."""
    if not links or not per_link_gbs:
        return None
    return links * per_link_gbs


def parse_nvlink_status(text: str) -> dict[int, float]:
    """``nvidia-smi nvlink -s`` -> {GPU index: GB/s per direction over all its links}."""
    out: dict[int, float] = {}
    gpu = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("GPU ") and ":" in s:
            try:
                gpu = int(s[4:s.index(":")])
            except ValueError:
                gpu = None
        elif gpu is not None and s.startswith("Link ") and s.endswith("GB/s"):
            try:
                out[gpu] = out.get(gpu, 0.0) + float(s.split(":", 1)[1].split()[0])
            except (ValueError, IndexError):
                continue
    return {k: round(v, 1) for k, v in out.items()}
