"""How far each kernel is from its own roofline, from Nsight Compute's CSV.

Per kernel name: launches, total time, DRAM bytes read + written, achieved
GB/s (bytes / time), its share of the peak (one given, else NVML's read on the
host, else the GPU's datasheet peak by name), ncu's own ``dram__throughput`` and ``sm__throughput`` (time-
weighted over the launches), and a verdict:

- ``near-roofline`` — at least 80 % of the peak;
- ``memory-bound`` — memory-bound *below* its roofline: DRAM at 30–80 % of
  the peak and the SMs not busier (this is where time can be won by reading
  less or reading better);
- ``compute-bound`` — not memory-bound: SM throughput ≥ 60 % and above DRAM;
- ``latency-bound`` — not memory-bound: DRAM and SM both low (tiny kernels,
  launch-bound, serial code);
- ``unknown`` — every launch had an ``n/a`` in a needed metric.

Without a peak the verdict reads ncu's ``dram__throughput`` (its own share of
the sustained peak) in place of the share of the datasheet peak.

``--bytes KERNEL=N`` says what a launch must read (a layer's weights): each
matching kernel gets ``must_read`` and ``read_ratio`` — "1.0× the bytes it
must", or "2.0×: it reads its weights twice". From the roofline's weights
instead (``--weights-gb``, per decode step), :mod:`ncu_step_read` fills
``step_reads``: per bucket, bytes read per step against what it must read.

The JSON shape (``perftriage kernels --json``) is the field order of
:class:`NcuSummary` / :class:`NcuKernel`: ``gpu, peak_gbs, kernels: [{name,
launches, time_us, bytes, gbs, pct_of_peak, dram_pct, sm_pct, verdict}]``
first, extras after; kernels by total time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import msgspec

from perftriage.core import gpus
from perftriage.core.profile import ncu_csv as raw

NEAR_ROOFLINE_PCT = 80.0
OVER_PEAK_PCT = 100.0  # above the peak: the peak is not this GPU's
LOW_DRAM_PCT = 30.0
HIGH_SM_PCT = 60.0

NEAR, MEMORY, COMPUTE, LATENCY, UNKNOWN = (
    "near-roofline", "memory-bound", "compute-bound", "latency-bound", "unknown")
VERDICT_TEXT = {
    NEAR: "near roofline",
    MEMORY: "memory-bound below roofline",
    COMPUTE: "not memory-bound (compute)",
    LATENCY: "not memory-bound (latency)",
    UNKNOWN: "unknown (n/a values)",
}

# what to run to get CSV this reads (the probe runs it with these flags)
NCU_FLAGS = ("--clock-control", "none", "--csv", "--metrics", ",".join(raw.METRICS))
NCU_HINT = "ncu " + " ".join(NCU_FLAGS) + " COMMAND…"


class NcuKernel(msgspec.Struct, frozen=True):
    name: str
    launches: int
    time_us: float
    bytes: int
    gbs: float | None
    pct_of_peak: float | None
    dram_pct: float | None
    sm_pct: float | None
    verdict: str
    # extras (after the public shape)
    time_pct: float = 0.0  # share of all profiled kernel time
    bytes_read: int = 0
    bytes_write: int = 0
    na_launches: int = 0  # launches left out of the totals (an n/a value)
    must_read: int | None = None  # bytes a launch must read (--bytes)
    read_ratio: float | None = None  # bytes read per launch / must_read
    # distinct kernel names in this row: more than 1 for a row the host folded
    # (ncu_csv.fit: by base name, name family or first word) to fit the answer
    names: int = 1


class StepRead(msgspec.Struct, frozen=True):
    """(:mod:`ncu_step_read`) One bucket's bytes read per decode step against what it must read."""

    bucket: str  # weights | moe | gemm | attention
    must: str  # what it must read: weights, expert weights, dense weights, KV cache
    kernels: list[str]  # kernel names in it, by bytes read
    read_per_step: int  # bytes, per GPU
    must_read: int  # bytes, per GPU
    read_ratio: float
    na_launches: int = 0  # launches left out (an n/a value): the read is a lower bound


class NcuSummary(msgspec.Struct, frozen=True):
    gpu: str | None
    peak_gbs: float | None
    kernels: list[NcuKernel]
    # extras
    peak_source: str = ""
    launches: int = 0
    na: dict[str, int] = {}  # metric -> n/a values
    # metric -> values that are no amount (NaN, infinite, negative, beyond
    # ncu_csv.CAPS): left out of the totals like n/a
    bad: dict[str, int] = {}
    notes: list[str] = []  # ncu's ==ERROR== / ==WARNING== lines
    # what the probe's answer left out to fit the transport (ncu_csv.fit): the
    # smallest kernels by time (their launches and time still in the totals)
    cut_kernels: int = 0
    cut_launches: int = 0
    cut_time_pct: float = 0.0
    short_names: int = 0  # names past ncu_csv.NAME_CAP characters, shortened
    # kernels the host folded into rows of several names to fit the answer
    # (nothing left out: their rows are in ``kernels``), and how
    grouped_kernels: int = 0
    grouped_by: str = ""
    # what does not add up: a kernel above 100 % of the peak (another GPU's CSV,
    # a wrong --gpu or --peak-gbs)
    warnings: list[str] = []
    step_reads: list[StepRead] = []  # per bucket, from the roofline's weights (ncu_step_read)

    def top(self, n: int | None) -> "NcuSummary":
        if n is None or n >= len(self.kernels):
            return self
        return msgspec.structs.replace(self, kernels=self.kernels[:n])


class NcuInputError(ValueError):
    """A CSV this cannot summarise; the message names what is missing and the
    ncu command that would give it."""


def verdict(bw_pct: float | None, sm_pct: float | None) -> str:
    """Near roofline / memory-bound below it / compute / latency, from the
    DRAM share of peak and ncu's SM throughput."""
    if bw_pct is None:
        return UNKNOWN
    if bw_pct >= NEAR_ROOFLINE_PCT:
        return NEAR
    if sm_pct is not None and sm_pct >= HIGH_SM_PCT and sm_pct > bw_pct:
        return COMPUTE
    return MEMORY if bw_pct >= LOW_DRAM_PCT else LATENCY


def bw_pct(k: NcuKernel) -> float | None:
    """The share of the peak a kernel reached: of the datasheet peak when
    known, else ncu's own ``dram__throughput``."""
    return k.pct_of_peak if k.pct_of_peak is not None else k.dram_pct


def recoverable_pct(k: NcuKernel) -> float:
    """The share of kernel time a memory-bound kernel would give back at its
    roofline: time share x (1 - share of peak). 22 % of the time at 49 % of
    the peak: ≈ 11 %. Kernels near the roofline or not memory-bound: 0."""
    bw = bw_pct(k)
    if k.verdict != MEMORY or bw is None:
        return 0.0
    return k.time_pct * (1.0 - min(bw, 100.0) / 100.0)


def furthest_below(s: NcuSummary, n: int = 3) -> list[NcuKernel]:
    """The memory-bound kernels with the largest recoverable share, largest first."""
    ranked = sorted((k for k in s.kernels if recoverable_pct(k) > 0),
                    key=lambda k: (-recoverable_pct(k), k.name))
    return ranked[:n]


def parse_must_read(specs: list[str]) -> list[tuple[re.Pattern[str], int]]:
    """``KERNEL=N`` (a regular expression searched in the kernel name, N
    bytes, ``_`` and ``,`` allowed) -> compiled pairs; NcuInputError names
    the bad one."""
    out = []
    for spec in specs:
        pattern, sep, size = spec.rpartition("=")
        try:
            n = int(size.replace("_", "").replace(",", ""))
        except ValueError:
            n = -1
        if not sep or not pattern or n <= 0:
            raise NcuInputError(f"--bytes {spec!r}: expected KERNEL=BYTES, e.g. "
                                "fused_moe_kernel=100663296")
        try:
            out.append((re.compile(pattern), n))
        except re.error as exc:
            raise NcuInputError(f"--bytes {spec!r}: bad pattern: {exc}") from None
    return out


def resolve_peak(gpu: str | None, peak_gbs: float | None,
                 nvml: Sequence[float] | None = None) -> tuple[float | None, str]:
    """(GB/s, where it came from): a given figure, else NVML's (2 x max
    memory clock x bus width / 8, read on the host), else the GPU's datasheet."""
    if peak_gbs:
        return float(peak_gbs), "given (--peak-gbs)"
    if nvml and len(nvml) == 2:
        hw = gpus.peak_bandwidth(gpu, int(nvml[0]), float(nvml[1]))
        if hw.gbs and hw.source.startswith("nvml"):
            return hw.gbs, hw.source
    known = gpus.find(gpu)
    if known is not None:
        return known.peak_gbs, f"table: {known.source}"
    if gpu:
        return None, f"unknown GPU {gpu!r}: give --peak-gbs"
    return None, "GPU not named (kernels: give --gpu NAME or --peak-gbs); verdicts use ncu's dram %"


def _gpu_key(name: str) -> str:
    """A GPU's model: its datasheet entry when the table knows it, else its name."""
    known = gpus.find(name)
    return known.name if known is not None else name.strip()


def _round(v: float | None, nd: int) -> float | None:
    return None if v is None else round(v, nd)


def summarize(folded: dict[str, Any], *, gpu: str | None = None, peak_gbs: float | None = None,
              must_read: Sequence[tuple[re.Pattern[str], int]] = ()) -> NcuSummary:
    """A :class:`NcuSummary` from :func:`ncu_csv.fold`'s totals."""
    if folded.get("error"):
        raise NcuInputError(str(folded["error"]))
    seen = folded.get("seen", {})
    missing = [m for m in raw.REQUIRED if not seen.get(m)]
    if missing:
        raise NcuInputError(
            f"no {', '.join(missing)} in the CSV ({folded.get('lines', 0)} lines read); "
            f"collect them with: {NCU_HINT}")
    several = [str(g) for g in folded.get("gpus") or ()]
    if len({_gpu_key(g) for g in several}) > 1:
        raise NcuInputError(
            f"launches from {len(several)} GPUs ({', '.join(several)}): one peak cannot judge "
            "them; profile each GPU on its own (ncu --devices N) or split the CSV by its "
            "Device column")
    gpu = gpu or folded.get("gpu") or None
    known = gpus.find(gpu)
    gpu = known.name if known is not None else gpu
    peak, source = resolve_peak(gpu, peak_gbs, folded.get("nvml"))
    kernels_raw: dict[str, list[float]] = folded.get("kernels", {})
    cut = folded.get("cut") or {}
    cut_totals = [float(v) for v in cut.get("totals") or [0.0] * 10]
    total_ns = sum(a[raw.TIME_NS] for a in kernels_raw.values()) + cut_totals[raw.TIME_NS]
    # rows the host folded (ncu_csv.fit): [distinct names, *totals] under a key
    groups = {f"{key} [{int(g[0]):,} kernel{'s' if int(g[0]) != 1 else ''}]" if key != raw.OTHER
              else f"(the other {int(g[0]):,} kernels)": (int(g[0]), [float(v) for v in g[1:]])
              for key, g in (folded.get("groups") or {}).items()}
    rows_raw = {**{name: (1, a) for name, a in kernels_raw.items()}, **groups}
    total_ns += sum(a[raw.TIME_NS] for _, a in groups.values())
    rows = []
    over: list[str] = []
    for name, (n_names, a) in rows_raw.items():
        t = a[raw.TIME_NS]
        nbytes = a[raw.READ_B] + a[raw.WRITE_B]
        complete = int(a[raw.COMPLETE])
        gbs = nbytes / t if complete and t > 0 else None  # bytes per ns = GB/s
        pct = 100.0 * gbs / peak if gbs is not None and peak else None
        dram = a[raw.DRAM_W] / a[raw.DRAM_T] if a[raw.DRAM_T] > 0 else None
        sm = a[raw.SM_W] / a[raw.SM_T] if a[raw.SM_T] > 0 else None
        judged = pct if peak else dram
        if pct is not None and pct > OVER_PEAK_PCT:  # no kernel beats the hardware's peak
            over.append(f"{name[:80]} moved {pct:.0f} % of the peak")
            judged = dram  # ncu's own dram__throughput, which knows the GPU it ran on
        must = next((n for p, n in must_read if p.search(name)), None)
        ratio = (a[raw.READ_B] / complete / must) if must and complete else None
        rows.append(NcuKernel(
            name=name, launches=int(a[raw.LAUNCHES]), time_us=round(t / 1000.0, 3),
            bytes=int(nbytes), gbs=_round(gbs, 1), pct_of_peak=_round(pct, 1),
            dram_pct=_round(dram, 1), sm_pct=_round(sm, 1),
            verdict=verdict(judged, sm) if complete else UNKNOWN,
            time_pct=round(100.0 * t / total_ns, 2) if total_ns > 0 else 0.0,
            bytes_read=int(a[raw.READ_B]), bytes_write=int(a[raw.WRITE_B]),
            na_launches=int(a[raw.NA]), must_read=must, read_ratio=_round(ratio, 2),
            names=n_names))
    rows.sort(key=lambda k: (-k.time_us, k.name))
    na = {m: n for m, n in folded.get("na", {}).items() if n}
    bad = {str(m): int(n) for m, n in (folded.get("bad") or {}).items() if n}
    warnings = [] if not over else [
        f"{len(over)} kernel(s) above 100 % of the {peak:g} GB/s peak ({over[0]}"
        + (f", and {len(over) - 1} more" if len(over) > 1 else "") + "): the CSV is from "
        "another GPU, or --gpu / --peak-gbs is wrong; their verdicts use ncu's own "
        "dram__throughput"]
    return NcuSummary(gpu=gpu, peak_gbs=peak, kernels=rows, peak_source=source, bad=bad,
                      warnings=warnings,
                      launches=sum(k.launches for k in rows) + int(cut_totals[raw.LAUNCHES]),
                      na=na, notes=list(folded.get("notes", [])),
                      cut_kernels=int(cut.get("kernels", 0)),
                      cut_launches=int(cut_totals[raw.LAUNCHES]),
                      cut_time_pct=round(100.0 * cut_totals[raw.TIME_NS] / total_ns, 2)
                      if total_ns > 0 else 0.0,
                      short_names=int(folded.get("short_names", 0)),
                      grouped_kernels=int((folded.get("grouped") or {}).get("kernels", 0)),
                      grouped_by=str((folded.get("grouped") or {}).get("by", ""))[:40])


def cut_text(s: NcuSummary) -> str:
    """What the probe's answer left out to fit the transport ("" when
    nothing): ``top 212 of 600 kernels (the other 388, 0.8 % of kernel time,
    left out to fit the answer); 212 names over 256 characters shortened``."""
    parts = []
    if s.grouped_kernels:
        rows = sum(1 for k in s.kernels if k.names > 1)
        parts.append(f"top {len(s.kernels) - rows} kernels by name, the other "
                     f"{s.grouped_kernels:,} folded into {rows} rows by {s.grouped_by} to fit "
                     "the answer (every launch and all the time still in the table)")
    if s.cut_kernels:
        parts.append(f"top {len(s.kernels)} of {len(s.kernels) + s.cut_kernels} kernels "
                     f"(the other {s.cut_kernels}, {s.cut_time_pct:.1f} % of kernel time, "
                     "left out to fit the answer)")
    if s.short_names:
        parts.append(f"{s.short_names} names over {raw.NAME_CAP} characters shortened")
    return "; ".join(parts)


def summarize_file(path: str, **kw: Any) -> NcuSummary:
    """Read (streamed) and summarise one ncu CSV; NcuInputError names the
    file and what is wrong."""
    try:
        folded = raw.fold_file(path)
    except OSError as exc:
        raise NcuInputError(f"{path}: {exc.strerror or exc}") from None
    except raw.NcuCsvError as exc:
        raise NcuInputError(f"{path}: {exc}; expected the output of {NCU_HINT}") from None
    try:
        return summarize(folded, **kw)
    except NcuInputError as exc:
        raise NcuInputError(f"{path}: {exc}") from None
