"""The GPU's side: kernels below their roofline (only when the GPU is busy),
bytes a token does not need, communication that nothing overlaps, one rank
the others wait for, clocks the GPU was made to slow.
"""

from __future__ import annotations

import re

from perftriage.core.profile.buckets import COMMUNICATION
from perftriage.core.profile.ncu import NcuKernel, bw_pct, furthest_below
from perftriage.core.profile.model import ProfileSummary
from perftriage.core.profile.table import short_name
from perftriage.core.model.findings import Evidence, Finding, NextStep, pct
from perftriage.core.triage.rules import rule
from perftriage.core.triage.witnesses import Witnesses

ROOF_PCT = 80.0  # Nsight Compute: at 80 % of peak or above a kernel is at its roof
WASTE_MODERATE = 1.3  # traffic ratio: moderate above 1.3x, high above 2x (the bands)
STRAGGLER_RATIO = 0.67  # one rank's collective time under this share of the others' median
KERNEL_NAME_CHARS = 300  # a kernel name an ncu step keeps (C++ templates run long)
TOP_KERNELS = 3
UNKNOWN_CLOCK_LOSS = 0.3


def _capture_share(p: ProfileSummary | None, k: NcuKernel) -> tuple[float, str]:
    """A kernel's share of the step: from the capture when it has the kernel
    (what the step spends), else of the ncu run's own kernel time."""
    if p is not None:
        row = next((r for r in p.kernels if r.name == k.name or r.name.startswith(k.name[:60])),
                   None)
        if row is not None:
            return row.pct, "of the capture's kernel time"
    return k.time_pct, "of the ncu run's kernel time"


@rule("kernel-below-roofline", own=("ncu",), tree=True)
def roofline_findings(w: Witnesses, busy_pct: float, busy_source: Evidence) -> list[Finding]:
    """Under "the GPU is busy": kernels below their roofline."""
    p, ncu = w.profile, w.ncu
    if ncu is not None:
        s = ncu.value
        below = furthest_below(s, TOP_KERNELS)
        if not below:
            return []
        total, ev = 0.0, [busy_source]
        for k in below:
            share, of = _capture_share(p, k)
            bw = bw_pct(k) or 0.0
            if bw > 100.0 and k.dram_pct is not None:  # another GPU's peak: ncu's own figure
                bw = k.dram_pct
            lost = share * (1.0 - min(bw, 100.0) / 100.0)
            total += lost
            ev.append(Evidence("ncu", f"`{short_name(k.name, 80)}` at {bw:.0f} % of peak, {share:.0f} % "
                                      f"{of}: ≈ {lost:.1f} % recoverable", ncu.t, ncu.source))
        explains = busy_pct * total / 100.0
        return [Finding(
            cause="kernel-below-roofline", explains_pct=explains, host=w.host,
            title=(f"the GPU is busy but its top kernels run below their roofline: "
                   f"{pct(explains)} of the time is theirs to give back"),
            evidence=ev,
            fix=["a faster kernel for " + ", ".join(f"`{short_name(k.name, 40)}`" for k in below)
                 + " (another backend: --moe-runner-backend for a MoE kernel, "
                   "--attention-backend; tuned tile sizes, a fused kernel)"])]
    above = (1.0 - 1.0 / w.gap) * 100.0 if w.gap and w.gap > 1.0 else None
    lead = busy_pct * above / 100.0 if above is not None else None
    if p is None:
        return [Finding(
            cause="kernel-below-roofline", confirmed=False, explains_pct=lead, host=w.host,
            title=(f"the GPU is busy {pct(busy_pct)}: which kernels take the step? need a "
                   "profile capture, then ncu on its top kernels"),
            evidence=[busy_source] + ([Evidence("gap", f"gap {w.gap:.1f}x to the floor", w.end,
                                                "gap")] if w.gap else []),
            next=NextStep("capture", [], "the capture names the kernels that take the step"))]
    top = [k for k in p.kernels if k.bucket != COMMUNICATION][:TOP_KERNELS]
    if not top:
        return []
    regex = "|".join(re.escape(k.name.split("<", 1)[0].split("(", 1)[0][:40]) for k in top)
    names = tuple(dict.fromkeys(k.name[:KERNEL_NAME_CHARS] for k in top))  # as the capture says
    ev = [busy_source, Evidence("capture", "top kernels: " + ", ".join(
        f"`{short_name(k.name, 50)}` {k.pct:.0f} %" for k in top), w.capture.t if w.capture else None,
        w.capture.source if w.capture else "")]
    if w.gap:
        ev.append(Evidence("gap", f"gap {w.gap:.1f}x to the floor", w.end, "gap"))
    return [Finding(
        cause="kernel-below-roofline", confirmed=False, explains_pct=lead, host=w.host,
        title=(f"the GPU is busy {pct(busy_pct)}: are its kernels below their roofline? "
               "need ncu on the top kernels"),
        evidence=ev,
        next=NextStep("ncu", ["--kernel", regex],
                      "ncu measures each top kernel's bandwidth against the peak "
                      "(it replays every kernel: the server slows while it runs)",
                      kernels=names))]


@rule("wasted-traffic", own=("gap",), busy_time=True)
def traffic_finding(w: Witnesses, busy_pct: float | None) -> Finding | None:
    r = w.traffic_ratio
    if r is None or r < WASTE_MODERATE:
        return None
    share = (r - 1.0) / r * 100.0 * ((busy_pct or 100.0) / 100.0)
    return Finding(
        cause="wasted-traffic", explains_pct=share, host=w.host,
        title=f"memory moves {r:.1f}x the bytes a token needs",
        evidence=[Evidence("gap", f"traffic ratio {r:.2f} (achieved DRAM bytes over the useful "
                                  "ones), median of the phase", w.end, "gap")],
        fix=["look for dtype conversions, unfused kernels, weights or KV read twice",
             "ncu's bytes per kernel against what it must read (kernels --bytes)"],
        next=NextStep("ncu", [], "ncu's bytes per kernel say which kernel reads too much")
        if w.ncu is None else None)


@rule("exposed-comm", own=("capture",), busy_time=True, tree=True)
@rule("straggler", own=("capture",), busy_time=True, tree=True)
def comm_findings(w: Witnesses) -> list[Finding]:
    """``straggler`` (one rank spends least in collectives: the others wait
    for it) and ``exposed-comm`` (communication nothing overlaps), top-down:
    a straggler explains the waiting ranks' exposed communication."""
    p = w.profile
    if p is None or not p.window_ms or w.capture is None:
        return []
    at, cap = w.capture.t, w.capture.source
    out: list[Finding] = []
    window_per_rank = p.window_ms / max(p.ranks, 1)
    exposed = 100.0 * (p.exposed_comm_ms or 0.0) / p.window_ms
    straggler_share = 0.0
    if p.ranks >= 2 and p.rank_labels:
        comm = [0.0] * len(p.rank_labels)
        for k in p.kernels:
            if k.bucket == COMMUNICATION and len(k.rank_ms) == len(comm):
                comm = [a + b for a, b in zip(comm, k.rank_ms)]
        if max(comm) > 0:
            late = min(range(len(comm)), key=comm.__getitem__)
            others = sorted(c for i, c in enumerate(comm) if i != late)
            mid = others[len(others) // 2]
            if comm[late] < STRAGGLER_RATIO * mid:
                straggler_share = 100.0 * (mid - comm[late]) / window_per_rank
                label = p.rank_labels[late]
                out.append(Finding(
                    cause="straggler", explains_pct=straggler_share, host=w.host,
                    title=(f"rank {label} is late: the others wait for it in their collectives, "
                           f"{pct(straggler_share)} of each step"),
                    evidence=[Evidence("capture", f"time in collectives per rank: " + ", ".join(
                        f"{lab} {c:.1f} ms" for lab, c in zip(p.rank_labels, comm)), at, cap)],
                    fix=[f"find what delays {label}: its host stacks (a stall on that rank's "
                         "process), its GPU's clocks, its input"],
                    next=NextStep("stacks", ["--seconds", "3"],
                                  f"stacks of {label}'s process name what makes it late")))
    if exposed >= 1.0:
        explained = min(exposed, straggler_share)
        own = exposed - explained
        f = Finding(
            cause="exposed-comm", explains_pct=own, host=w.host,
            title=f"communication nothing overlaps: {pct(exposed)} of the time"
                  + (f", {pct(explained)} of it waiting for the straggler" if explained else ""),
            evidence=[Evidence("capture", f"exposed communication {p.exposed_comm_ms:.1f} ms of "
                                          f"{p.window_ms:.1f} ms over {p.ranks} rank(s)", at, cap)],
            fix=comm_fixes(p))
        if explained:
            f.against.append(Evidence("capture", "the waiting is a consequence of the straggler",
                                      at, cap))
        out.append(f)
    return out


def comm_fixes(p: ProfileSummary) -> list[str]:
    """Fixes for exposed communication that fit the workload (a training step: DDP/FSDP)."""
    if p.workload == "training":
        return ["overlap the gradients' all-reduce with the backward pass (DDP bucket_cap_mb, "
                "gradient_as_bucket_view; FSDP backward_prefetch / forward_prefetch)",
                "fewer, larger collectives: bucket small tensors, a larger batch per step"]
    out = ["overlap communication with compute, or a layout that needs less of it "
           "(TP/EP size, all-reduce fusion)"]
    if any(k.bucket == COMMUNICATION and k.name.startswith("nccl") for k in p.kernels):
        # NCCL's ring for a TP all-reduce within one node: SGLang's own one-shot kernel
        # is off (the flag, or a size it does not take)
        out.insert(0, "SGLang's custom all-reduce for TP within a node (drop "
                      "--disable-custom-all-reduce)")
    return out


@rule("gpu-throttle", own=("nvml",), busy_time=True)
def throttle_finding(w: Witnesses, busy_pct: float | None) -> Finding | None:
    share = w.throttled_share
    if not share or share < 0.05 or not w.throttle_reasons:
        return None
    if busy_pct is not None and busy_pct < 30.0:
        return None  # an idle GPU lowers its clocks: no cost
    # the clock lost while slowed; unknown clocks: a power cap's typical 30 % (docs/triage.md)
    lost = 1.0 - w.throttle_clock if w.throttle_clock is not None else UNKNOWN_CLOCK_LOSS
    explains = share * 100.0 * max(0.0, lost)
    return Finding(
        cause="gpu-throttle", explains_pct=explains, host=w.host,
        title=f"the GPU slows its clocks ({', '.join(w.throttle_reasons)}) "
              f"{share * 100:.0f} % of the time while busy",
        evidence=[Evidence("nvml", f"clock-event reasons {', '.join(w.throttle_reasons)} in "
                                   f"{share * 100:.0f} % of the readings" + (
                                       "" if w.throttle_clock is None else
                                       f", SM clock at {w.throttle_clock * 100:.0f} % of its "
                                       "max then"), w.end, "nvml")],
        fix=["check cooling and the power limit (nvidia-smi -q -d PERFORMANCE,POWER)"])
