"""One diagnosis from every witness of one window, top-down (Intel's TMA: a
child only when its parent holds):

    the step ─┬─ the GPU idles ── waiting for the host ─┬─ host-sync
              │                                          ├─ host-stall
              │                                          └─ launch-bound
              ├─ the GPU is busy ── kernel-below-roofline
              ├─ communication ── straggler ── exposed-comm (the rest)
              └─ beside the tree: every rule registered beside it
                 (core/triage/rules.py: wasted-traffic, gpu-throttle,
                 kv-pressure, queueing, near-floor, ...)

GPU idle comes from the capture (its timeline), else from NVML's
utilisation (the share of time a kernel ran) — never from DRAM idle, which
is high on a busy GPU whose kernels are below their roofline.
"""

from __future__ import annotations

from perftriage.core.model.findings import CAUSES, NEED_EVIDENCE
from perftriage.core.triage import rules
# the rules' modules, in the order their rules beside the tree run (core/triage/rules.py)
from perftriage.core.triage.gpu_side import comm_findings, roofline_findings
from perftriage.core.triage.capture_gaps import warmup_finding
from perftriage.core.triage.host_side import cpu_throttle_finding, host_findings
from perftriage.core.model.findings import Evidence, Finding, NextStep, pct, ranked
from perftriage.core.triage.serving import floor_finding
from perftriage.core.triage.witnesses import Witnesses

IDLE_MIN_PCT = 5.0  # GPU idle below this: the host side is not looked at
BUSY_MIN_PCT = 50.0  # GPU busy at least this: its kernels are looked at


def gpu_idle(w: Witnesses) -> tuple[float | None, Evidence | None]:
    """The GPU's idle share of the window and the witness it came from."""
    p = w.profile
    if p is not None and p.idle_pct is not None and w.capture is not None:
        return p.idle_pct, Evidence("capture", f"GPU idle {pct(p.idle_pct)} of the capture's "
                                               f"window ({p.ranks} rank(s))",
                                    w.capture.t, w.capture.source)
    if w.gpu_util_pct is not None:
        idle = max(0.0, 100.0 - w.gpu_util_pct)
        return idle, Evidence("nvml", f"GPU utilisation {w.gpu_util_pct:.0f} % (median): no "
                                      f"kernel ran {pct(idle)} of the time", w.end, "nvml")
    return None, None


@rules.rule(NEED_EVIDENCE, tree=True)  # what to measure when the tree cannot go on
def diagnose(w: Witnesses) -> list[Finding]:
    """The findings of one host over one window, ranked by their share: the
    tree below, then every rule beside it (:mod:`.rules`)."""
    found: list[Finding] = []
    floor = floor_finding(w)
    idle, source = gpu_idle(w)
    busy = None if idle is None else 100.0 - idle
    warm = warmup_finding(w, idle)
    if warm is not None:  # a capture of warm-up is not diagnosed as a step
        found.append(warm)
        busy = None  # (nor by the rules beside the tree: its busy share is warm-up's)
    elif idle is None or source is None:
        if floor is None and (w.decode_tps is not None or w.gap is not None):
            # the time above the floor (less what confirmed causes explain, below)
            above = (1.0 - 1.0 / w.gap) * 100.0 if w.gap and w.gap > 1.0 else None
            found.append(Finding(
                cause="need-evidence", confirmed=False, explains_pct=above, host=w.host,
                title=("not enough evidence: need a profile capture to tell a GPU that idles "
                       "from one that is busy" + (f" (gap {w.gap:.1f}x)" if w.gap else "")),
                next=NextStep("capture", [], "the capture's timeline says how much of the "
                              "step the GPU idles, and why")))
    else:
        if idle >= IDLE_MIN_PCT:
            found += host_findings(w, idle, source)
            cpu = cpu_throttle_finding(w, found)
            if cpu is not None:
                found.append(cpu)
        if busy is not None and busy >= BUSY_MIN_PCT and floor is None:
            busy_source = Evidence(source.witness, f"GPU busy {pct(busy)}", source.at,
                                   source.source)
            found += roofline_findings(w, busy, busy_source)
        found += comm_findings(w)
    for beside in rules.beside():  # the rules beside the tree, as registered
        extra = beside(w, busy)
        if extra is not None:
            found.append(extra)
    _leave_out_what_is_explained(found)
    if not found and w.decode_tps is None and w.capture is None:
        found.append(Finding(
            cause="need-evidence", confirmed=False, explains_pct=None, host=w.host,
            title="not enough evidence: no decode throughput, capture or GPU readings yet",
            next=NextStep("metrics", [], "follow the server's log or its /metrics, or take "
                          "a profile capture")))
    return ranked(found)


rules.check(CAUSES)  # every cause listed has its rule, every rule a listed cause
# confirmed causes that spend the busy GPU's time above the floor: what a lead
# "the kernels are below their roofline?" may not claim again
BUSY_TIME_CAUSES = rules.busy_time_causes()


def _leave_out_what_is_explained(found: list[Finding]) -> None:
    """A lead's share is the time above the floor still unexplained: the
    confirmed causes that spend the busy GPU's time are taken out of it."""
    explained = sum(f.explains_pct or 0.0 for f in found
                    if f.confirmed and f.cause in BUSY_TIME_CAUSES)
    if not explained:
        return
    for f in found:
        if not f.confirmed and f.cause in ("kernel-below-roofline", "need-evidence") \
                and f.explains_pct and f.next is not None and f.next.kind in ("ncu", "capture"):
            f.explains_pct = max(0.0, f.explains_pct - explained)
