"""What a capture alone says of the host, from the shape of the GPU's idle gaps
(``core/profile/gaps.py``), and what the capture is not:

- a **host stall** is a few long gaps (1 ms or more, the host late for the
  kernel after each): a DataLoader batch, a cuDNN warm-up, a Python stall.
  Confirmed by the trace when CPU ops span most of that idle (they are
  named), else a lead asking for stacks. Launch overhead is many short gaps:
  only the short ones count toward ``launch-bound``, and a capture whose
  idle is mostly in long gaps is never called launch-bound;
- a trace recorded while graphs were being captured (or whose idle is one
  gap of hundreds of ms before the first replay) is warm-up, not a step;
- a trace with kernels and no launch calls lacks the CPU side: it can say
  how much the GPU idles, never why.

The fixes fit the workload: a training step (backward, optimizer ops) gets
training fixes, an inference engine its own flags (SGLang's, vLLM's).
"""

from __future__ import annotations

from dataclasses import dataclass

from perftriage.core.profile.gaps import LONG_GAP_US
from perftriage.core.profile.model import ProfileSummary
from perftriage.core.model.findings import MODERATE_PCT, Evidence, Finding, NextStep, pct

LONG_RANGES = ("1-10ms", ">10ms")
OPS_SHOWN = 3
NAMED_SHARE = 0.5  # named ops cover at least this share of the long gaps listed: confirmed


@dataclass(frozen=True)
class GapShape:
    """Shares of the time (of the window) from the capture's gap lengths."""

    long_host_pct: float  # idle in long gaps the host was late for
    short_host_pct: float  # idle in short gaps the host was late for
    long_idle_share: float  # long gaps' share of all idle time (0..1)
    ops: list[tuple[str, float, int]]  # (op, ms, gaps) spanning the long host gaps
    listed_ms: float  # the long host gaps listed (the longest 20)
    gaps: int  # long gaps the host was late for
    long_queued_pct: float = 0.0  # idle in long gaps whose next kernels were launched already
    queued_ops: tuple[tuple[str, float, int], ...] = ()  # ops spanning those


def gap_shape(p: ProfileSummary, idle_pct: float) -> GapShape | None:
    """None where the capture has no gap split (nsys, a capture recorded
    before the split existed)."""
    table = p.idle_by_gap_length
    total = sum(g.idle_ms for g in table)
    if not table or total <= 0:
        return None
    long_host = sum(g.host_ms for g in table if g.range in LONG_RANGES)
    short_host = sum(g.host_ms for g in table if g.range not in LONG_RANGES)
    long_idle = sum(g.idle_ms for g in table if g.range in LONG_RANGES)
    host = [g for g in p.long_gaps if g.host_wait]
    return GapShape(long_host_pct=idle_pct * long_host / total,
                    short_host_pct=idle_pct * short_host / total,
                    long_idle_share=long_idle / total, ops=_by_op(host),
                    listed_ms=sum(g.dur_ms for g in host), gaps=len(host),
                    long_queued_pct=idle_pct * (long_idle - long_host) / total,
                    queued_ops=tuple(_by_op([g for g in p.long_gaps if not g.host_wait])))


def _by_op(gaps) -> list[tuple[str, float, int]]:
    """(op, ms, gaps) of the ops spanning ``gaps``, most time first."""
    by_op: dict[str, list[float]] = {}
    for g in gaps:
        if g.op:
            acc = by_op.setdefault(g.op, [0.0, 0])
            acc[0] += g.dur_ms
            acc[1] += 1
    return sorted(((op, ms, int(k)) for op, (ms, k) in by_op.items()), key=lambda x: -x[1])


def queued_gap_finding(w, shape: GapShape, parent: Evidence) -> Finding | None:
    """Long gaps the host had launched ahead for: the kernels waited on
    something the trace does not show (an event of another stream or
    process, a blocking copy). A lead, never a cause named."""
    if shape.long_queued_pct < MODERATE_PCT or w.capture is None:
        return None
    at, cap = w.capture.t, w.capture.source
    ops = shape.queued_ops
    during = f"; meanwhile the host is in `{ops[0][0][:60]}`" if ops else ""
    return Finding(
        cause="need-evidence", confirmed=False, explains_pct=shape.long_queued_pct,
        host=w.host,
        title=(f"the GPU waits in long gaps {pct(shape.long_queued_pct)} of the time with its "
               f"next kernels already launched (queued behind an event, another stream or a "
               f"blocking copy){during}: need host stacks"),
        evidence=[parent] + [Evidence("capture", f"`{op[:80]}` spans {k} of them ({ms:.1f} ms)",
                                      at, cap) for op, ms, k in ops[:OPS_SHOWN]],
        next=NextStep("stacks", ["--seconds", "3"], "a stacks record says what the host "
                      "waits in while the GPU's queue is blocked"))


def stall_from_gaps(w, shape: GapShape, share: float, parent: Evidence) -> Finding:
    """``host-stall`` from the long gaps alone: confirmed where ops span them."""
    assert w.capture is not None
    at, cap = w.capture.t, w.capture.source
    named = sum(ms for _, ms, _ in shape.ops)
    confirmed = bool(shape.ops) and named >= NAMED_SHARE * shape.listed_ms
    ev = [parent, Evidence("capture", f"{shape.gaps} idle gap(s) of {LONG_GAP_US / 1000:g} ms or "
                                      f"more the host was late for: {pct(shape.long_host_pct)} of "
                                      f"the time ({shape.long_idle_share * 100:.0f} % of the idle "
                                      "is in gaps over 1 ms)", at, cap)]
    ev += [Evidence("capture", f"`{op[:80]}` spans {k} of them ({ms:.1f} ms)", at, cap)
           for op, ms, k in shape.ops[:OPS_SHOWN]]
    top = shape.ops[0][0] if shape.ops else None
    p = w.profile
    if confirmed and top is not None:
        title = (f"the host stalls in `{top[:60]}`: the GPU waits in long gaps "
                 f"{pct(share)} of the time")
    else:
        title = (f"the host stalls: the GPU waits in long gaps (over 1 ms) {pct(share)} of the "
                 "time and no CPU op in the trace spans them: need host stacks")
    return Finding(
        cause="host-stall", confirmed=confirmed, explains_pct=share, host=w.host, title=title,
        evidence=ev, fix=stall_fixes(top, p),
        next=None if confirmed else NextStep(
            "stacks", ["--seconds", "3"], "a stacks record names the frame the host is busy in "
            "during the long gaps"))


def stall_fixes(op: str | None, p: ProfileSummary | None) -> list[str]:
    low = (op or "").lower()
    if "dataloader" in low:
        return ["load batches ahead of the GPU: DataLoader(num_workers > 0, pin_memory=True, "
                "persistent_workers=True, prefetch_factor)", "move preprocessing off the step "
                "(into the workers, or onto the GPU)"]
    if "cudnn" in low or "conv" in low:
        return ["a cuDNN autotune/warm-up gap: profile after the warm-up steps (schedule "
                "wait/warmup), and keep input shapes fixed so torch.backends.cudnn.benchmark "
                "tunes once"]
    if "memcpy" in low or "copy_" in low:
        return ["the host prepares inputs before each copy: pinned memory and "
                "non_blocking=True copies, inputs prepared ahead (another thread, the "
                "DataLoader's workers)"]
    if op:
        return [f"move `{op[:60]}` off the step's path (overlap it with the GPU: another "
                "thread or process), or make it cheaper"]
    return ["take host stacks to name what the host does in the long gaps"]


def launch_fixes(p: ProfileSummary) -> list[str]:
    """Fixes for launch overhead that fit the workload."""
    if p.workload == "training":
        return ["capture the training step as a CUDA/HIP graph (torch.compile(mode="
                "\"reduce-overhead\"), torch.cuda.graphs)",
                "fewer, larger kernels: torch.compile fuses the small ones; a larger batch "
                "per step"]
    if p.engine == "vllm":
        return ["drop --enforce-eager (vLLM captures CUDA graphs by default)",
                "raise the captured batch sizes above the running batch "
                "(--compilation-config cudagraph_capture_sizes / max_cudagraph_capture_size)"]
    return ["turn CUDA graphs on (drop --disable-cuda-graph)",
            "raise --cuda-graph-max-bs above the running batch"]


def warmup_finding(w, idle_pct: float | None) -> Finding | None:
    """A capture of warm-up: said so, and nothing diagnosed from it."""
    p = w.profile
    if p is None or not p.warmup or w.capture is None:
        return None
    return Finding(
        cause="need-evidence", confirmed=False, explains_pct=None, host=w.host,
        title=f"the capture is warm-up, not a step: {p.warmup}; capture the steady state",
        evidence=[Evidence("capture", p.warmup + (f"; GPU idle {pct(idle_pct)} of its window"
                                                  if idle_pct is not None else ""),
                           w.capture.t, w.capture.source)],
        next=NextStep("capture", [], "a capture of steady-state steps (after the graphs are "
                      "captured and the first replay ran) says where the step's time goes"))


def no_cpu_side_finding(w, idle_pct: float, parent: Evidence) -> Finding | None:
    """Kernels and no launch call: the trace cannot say why the GPU idles."""
    p = w.profile
    if p is None or p.launch_calls != 0:
        return None
    return Finding(
        cause="need-evidence", confirmed=False, explains_pct=idle_pct, host=w.host,
        title=(f"the GPU idles {pct(idle_pct)} of the time and the trace lacks the CPU side "
               "(no launch calls): need a capture with CPU activities"),
        evidence=[parent, Evidence("capture", "kernels but no CUDA/HIP runtime events "
                                              "(activities=[CUDA] only, or a sampled trace)",
                                   w.capture.t if w.capture else None,
                                   w.capture.source if w.capture else "")],
        next=NextStep("capture", [], "a capture with activities CPU and CUDA joins each idle "
                      "gap to the host's launch: late host, syncs or launch overhead"))
