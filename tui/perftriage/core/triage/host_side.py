"""The host's side of a slow step, reported only when its parent holds: the
GPU idles and the idle is *host wait* (HTA: the next launch came after the
previous kernel ended). That share of the step is split between

- ``host-sync``: host wait right after a blocking sync call (a value read
  back, ``cudaStreamSynchronize``), from the capture;
- ``host-stall``: the host's Python busy outside the model's forward pass
  (the scheduler, detokenising, a planted stall), from a stacks record —
  its frame's share of wall time, never of busy samples only;
- ``launch-bound``: the rest, when the capture shows eager launches (no
  ``cudaGraphLaunch``) of kernels shorter than their launch call.

What cannot be split yet is a lead with the next witness to take. Under
these, ``cpu-throttle``: the part of each that is waiting for a CPU (PSI,
the cgroup's CFS throttling), taken out of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from perftriage.core.profile.model import ProfileSummary
from perftriage.core.stacks.summary import ProcessStacks, StacksSummary, busy_share, chain
from perftriage.core.triage.capture_gaps import (
    gap_shape,
    launch_fixes,
    no_cpu_side_finding,
    queued_gap_finding,
    stall_from_gaps,
)
from perftriage.core.model.findings import Evidence, Finding, NextStep, pct
from perftriage.core.triage.rules import rule
from perftriage.core.triage.witnesses import Witnesses

# frames where the host waits (for the GPU, a lock, the network) rather than works
WAIT_WORDS = ("synchronize", "_local_scalar_dense", "item", "tolist", "wait", "select", "poll",
              "sleep", "recv", "acquire", "cudagraphlaunch", "replay", "read", "join")
# frames of the model's forward pass: the host launching kernels, not stalling
FORWARD_WORDS = ("forward", "_call_impl", "_wrapped_call_impl")
# a value read back to the host: what a host sync looks like in a stack
SYNC_WORDS = ("_local_scalar_dense", ".item", "item", "tolist", "synchronize", "__float__",
              "__int__", "__bool__")
SHORT_SHARE = 0.3  # kernels shorter than their launch call: at least this share of launches
GRAPH_SHARE = 0.5  # kernel time launched by cudaGraphLaunch: CUDA graphs are on


def _name(frame_text: str) -> str:
    return frame_text.split(" (", 1)[0]


def _is_wait(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in WAIT_WORDS)


def _in_forward(frames: list[str]) -> bool:
    return any(any(w in _name(f) for w in FORWARD_WORDS) for f in frames)


@dataclass
class HostWork:
    """What a stacks record says of the host's time: shares of wall time."""

    process: ProcessStacks
    stall_pct: float  # Python busy outside the forward pass, not waiting
    forward_pct: float  # busy in the forward pass (launching)
    wait_pct: float  # waiting for the GPU or idle
    stall_frame: str | None  # the leaf frame that stalls most
    stall_frame_pct: float  # its share of wall time
    stall_frame_busy_pct: float  # and of the busy samples (what py-spy's table shows)
    sync_frame: str | None  # the caller of a read-back, if a stack has one


def host_work(s: StacksSummary) -> HostWork | None:
    """The busiest process's time, from its hottest stacks (a record only: a
    dump is one sample per thread, no share of time)."""
    if s.mode != "record" or not s.processes:
        return None
    proc = max(s.processes, key=lambda p: (p.samples, -p.pid))
    if not proc.stacks or proc.samples <= 0:
        return None
    busy = busy_share(proc)  # samples are the active ones: a share of them scales to wall
    stall = forward = wait = 0.0
    leaves: dict[str, float] = {}
    sync_frame = None
    for row in proc.stacks:
        share = row.pct * busy
        leaf = _name(row.frames[-1]) if row.frames else ""
        names = [_name(f) for f in row.frames]
        if sync_frame is None:
            for i, n in enumerate(names):
                if any(w in n for w in SYNC_WORDS) and i > 0:
                    sync_frame = names[i - 1]
                    break
        if _is_wait(leaf):
            wait += share
        elif _in_forward(row.frames):
            forward += share
        else:
            stall += share
            leaves[leaf] = leaves.get(leaf, 0.0) + share
    wait += (1.0 - busy) * 100.0
    top = max(leaves, key=lambda k: leaves[k]) if leaves else None
    top_pct = leaves.get(top, 0.0) if top else 0.0
    # a helper leaf (`_burn`) is named with its callers up to the frame to act on
    top_row = next((f for f in proc.frames if f.name == top), None)
    named = " ← ".join(chain(proc, top_row.name, top_row.file)) if top_row else ""
    return HostWork(process=proc, stall_pct=stall, forward_pct=forward, wait_pct=wait,
                    stall_frame=named or top, stall_frame_pct=top_pct,
                    stall_frame_busy_pct=top_pct / busy if busy > 0 else 0.0,
                    sync_frame=sync_frame)


def graph_share(p: ProfileSummary) -> float:
    """The share of kernel time launched by ``cudaGraphLaunch`` (CUDA graphs on)."""
    total = sum(k.total_ms for k in p.kernels) or 1.0
    graphed = 0.0
    for k in p.kernels:
        calls = sum(x.calls for x in k.launched_by) or 0
        by_graph = sum(x.calls for x in k.launched_by if x.call and "GraphLaunch" in x.call)
        if calls:
            graphed += k.total_ms * by_graph / calls
    return graphed / total


def _readbacks(p: ProfileSummary) -> list[str]:
    """``Memcpy DtoH`` rows with the op that launched them."""
    out = []
    for k in p.kernels:
        if "DtoH" in k.name or "Device -> Pinned" in k.name or "Device -> Pageable" in k.name:
            op = f" by {k.cpu_op}" if k.cpu_op else ""
            out.append(f"{k.calls} × {k.name}{op}")
    return out[:3]


@rule("host-stall", own=("stacks",), tree=True)
@rule("launch-bound", own=("capture",), tree=True)
@rule("host-sync", own=("capture",), tree=True)
def host_findings(w: Witnesses, idle_pct: float, idle_source: Evidence) -> list[Finding]:
    """The findings under "the GPU idles waiting for the host" (``idle_pct``:
    the GPU's idle share of the window)."""
    p = w.profile
    if p is None or p.idle_breakdown is None:
        return [Finding(
            cause="need-evidence", confirmed=False, explains_pct=idle_pct, host=w.host,
            title=(f"the GPU idles {pct(idle_pct)} of the time: need a profile capture to "
                   "tell a late host from syncs or communication"),
            evidence=[idle_source],
            next=NextStep("capture", [], "the capture's idle breakdown says whether the host "
                          "is late (host wait), and launches, syncs, CUDA graphs"))]
    b = p.idle_breakdown
    assert w.capture is not None
    at, cap = w.capture.t, w.capture.source
    blind = no_cpu_side_finding(w, idle_pct, idle_source)
    if blind is not None:
        return [blind]
    host_share = idle_pct * b.host_wait_pct / 100.0
    sync_share = min(host_share, idle_pct * b.after_sync_pct / 100.0)
    findings: list[Finding] = []
    parent = Evidence("capture", f"GPU idle {pct(idle_pct)}, host wait {b.host_wait_pct:.0f} % "
                                 f"of the idle", at, cap)
    work = host_work(w.host_stacks) if w.host_stacks is not None else None
    if sync_share >= 0.5:
        ev = [parent, Evidence("capture", f"{b.sync_calls} blocking sync calls "
                                          f"({b.sync_ms:.1f} ms on the CPU); host wait after a "
                                          f"sync: {b.after_sync_pct:.0f} % of the idle", at, cap)]
        ev += [Evidence("capture", f"read back: {r}", at, cap) for r in _readbacks(p)]
        if work is not None and work.sync_frame:
            ev.append(Evidence("stacks", f"read back in `{work.sync_frame}`",
                               w.stacks.t if w.stacks else None,
                               w.stacks.source if w.stacks else ""))
        findings.append(Finding(
            cause="host-sync", explains_pct=sync_share, host=w.host,
            title=f"the host waits on the GPU to read values back: {pct(sync_share)} of the time "
                  "idles after a sync",
            evidence=ev,
            next=None if work is not None else NextStep(
                "stacks", ["--seconds", "3"], "a stacks record names the frame that reads back"),
            fix=["keep the value on the GPU: no .item(), float(t), .tolist() or .cpu() in the "
                 "decode loop", "read back once per step, not per layer"]))
    rest = max(0.0, host_share - sync_share)
    shape = gap_shape(p, idle_pct)
    queued = None if shape is None else queued_gap_finding(w, shape, parent)
    if queued is not None:
        findings.append(queued)
    if rest < 0.5:
        return findings
    graphs = graph_share(p)
    short = p.launch.short_kernels / p.launch.launches if p.launch and p.launch.launches else 0.0
    eager = graphs < GRAPH_SHARE
    stall_share = 0.0
    # launch overhead is short gaps only (without the split: all of the host wait)
    short_host = rest if shape is None else shape.short_host_pct
    mostly_long = shape is not None and shape.long_idle_share > 0.5
    gap_stall = 0.0 if shape is None else min(rest, shape.long_host_pct)
    if work is not None and work.stall_frame and work.stall_frame_pct >= 1.0:
        # the named frame's own share: Python frames that call into C (a .tolist(),
        # a graph replay) are leaves too, and are not all the stall's
        stall_share = min(rest, work.stall_frame_pct)
        assert w.stacks is not None
        findings.append(Finding(
            cause="host-stall", explains_pct=stall_share, host=w.host,
            title=(f"the host's Python is busy in `{work.stall_frame}` between launches: "
                   f"{pct(work.stall_frame_pct)} of wall time "
                   f"({pct(work.stall_frame_busy_pct)} of busy samples)"),
            evidence=[parent, Evidence(
                "stacks", f"{work.process.name.split(' ', 1)[0] or 'pid'} {work.process.pid}: "
                          f"`{work.stall_frame}` {pct(work.stall_frame_pct)} of wall time, "
                          f"{pct(work.stall_frame_busy_pct)} of {work.process.samples} busy "
                          f"samples; outside the forward pass {pct(work.stall_pct)}",
                w.stacks.t, w.stacks.source)],
            fix=[f"move `{work.stall_frame}` off the scheduler's path (overlap it with the GPU, "
                 "another thread or process), or make it cheaper"]))
        if shape is not None and gap_stall >= 0.5:
            findings[-1].evidence.append(Evidence(
                "capture", f"{shape.gaps} idle gap(s) over 1 ms the host was late for: "
                           f"{pct(gap_stall)} of the time", at, cap))
    elif shape is not None and gap_stall >= 0.5:
        stall_share = gap_stall
        findings.append(stall_from_gaps(w, shape, gap_stall, parent))
    launch_share = min(rest - stall_share, short_host)
    if eager and short >= SHORT_SHARE and launch_share >= 0.5 and not mostly_long:
        assert p.launch is not None
        ev = [parent, Evidence("capture", f"{p.launch.short_kernels} of {p.launch.launches} "
                                          "kernels ran shorter than their launch call; "
                                          f"CUDA graphs launch {graphs * 100:.0f} % of kernel time",
                               at, cap)]
        against: list[Evidence] = []
        if work is not None and w.stacks is not None:
            seen = Evidence("stacks", f"host busy in the forward pass (launching) "
                                      f"{pct(work.forward_pct)} of wall time", w.stacks.t,
                            w.stacks.source)
            (ev if work.forward_pct >= 5.0 else against).append(seen)
        findings.append(Finding(
            cause="launch-bound", explains_pct=launch_share, host=w.host,
            title=(f"launch-bound: kernels shorter than their launch, CUDA graphs off — the GPU "
                   f"waits for launches {pct(launch_share)} of the time"),
            evidence=ev, against=against,
            next=None if work is not None else NextStep(
                "stacks", ["--seconds", "3"], "a stacks record tells launch work (the forward "
                "pass) from a stall elsewhere in the host's Python"),
            fix=launch_fixes(p)))
    elif work is None and launch_share >= 0.5 and not (stall_share and mostly_long):
        findings.append(Finding(
            cause="need-evidence", confirmed=False, explains_pct=launch_share, host=w.host,
            title=(f"the host is late {pct(launch_share)} of the time: need host stacks "
                   "to say where its Python spends it"),
            evidence=[parent],
            next=NextStep("stacks", ["--seconds", "3"],
                          "a 3 s stacks record names the frame the host is busy in")))
    return findings


PSI_PCT = 10.0  # PSI cpu some avg10 at or above this: runnable tasks wait for a CPU
THROTTLED_PCT = 5.0  # cgroup throttled at or above this share (of its time, or of CFS periods)
HOST_CAUSES = frozenset({"host-stall", "launch-bound", "host-sync"})


# the readings of the host's wait for a CPU, best first: (witness, what it is, source)
CPU_READINGS = (
    ("cpu_throttled_time_pct", "its cgroup throttled {v:.0f} % of the time (cpu.stat "
     "throttled_usec)", "cgroup"),
    ("cpu_psi_some_cgroup", "its cgroup's tasks waited for a CPU {v:.0f} % of the time "
     "(the cgroup's cpu.pressure some avg10)", "cgroup"),
    ("cpu_psi_some", "tasks waited for a CPU {v:.0f} % of the time (system PSI "
     "/proc/pressure/cpu some avg10: every task's wait)", "psi"),
    ("cpu_throttled_pct", "its cgroup throttled in {v:.0f} % of its CFS periods (cpu.stat "
     "nr_throttled / nr_periods: a share of periods, not of time)", "cgroup"),
)


def cpu_lost(w: Witnesses) -> tuple[float, str | None]:
    """The share of the time the host loses to waiting for a CPU (%) and the
    witness it was read from, best first:

    1. the cgroup's throttled share of wall time (``throttled_usec``), where
       a quota is in force and it is at least 5 %;
    2. else the cgroup's own ``cpu.pressure`` some avg10 where it was read
       (below 10 %: the engine's tasks do not wait, whatever the others do);
    3. else the system's ``/proc/pressure/cpu`` some avg10 (at least 10 %),
       or the share of CFS periods throttled (at least 5 %) where the
       throttled time is not known, the larger.

    The system's PSI counts every task's wait (busy loops beside the engine
    too) and a period throttled for 1 ms counts whole; on the H200
    recordings they read 90/74/64 % where the contention cost 79/48/39 %."""
    tt, cg = w.cpu_throttled_time_pct, w.cpu_psi_some_cgroup
    if tt is not None and tt >= THROTTLED_PCT:
        return min(100.0, tt), "cpu_throttled_time_pct"
    if cg is not None:
        return (min(100.0, cg), "cpu_psi_some_cgroup") if cg >= PSI_PCT else (0.0, None)
    psi, thr = w.cpu_psi_some, None if tt is not None else w.cpu_throttled_pct
    psi_lost = psi if psi is not None and psi >= PSI_PCT else 0.0
    thr_lost = thr if thr is not None and thr >= THROTTLED_PCT else 0.0
    if max(psi_lost, thr_lost) <= 0:
        return 0.0, None
    if psi_lost >= thr_lost:
        return min(100.0, psi_lost), "cpu_psi_some"
    return min(100.0, thr_lost), "cpu_throttled_pct"


@rule("cpu-throttle", own=("host",), tree=True)
def cpu_throttle_finding(w: Witnesses, found: list[Finding]) -> Finding | None:
    """Only as a cause under a host-side finding: the host is late, and its
    CPUs are contended (PSI) or its cgroup is throttled (CFS quota).

    Top-down (Intel's TMA): the child explains part of its parents, and they
    keep what remains. The host loses ``lost`` % of the time to waiting for a
    CPU (:func:`cpu_lost`); the host-side findings in ``found`` (host-stall,
    launch-bound, host-sync, the lead that asks for stacks) are the host's
    lateness, ``total`` % of the time together. cpu-throttle takes
    min(total, lost) of it, and each parent gives up its proportional part
    (parent x taken / total), so the time they explain together stays the
    same. Calibrated on the H200 recordings (0.2 / 0.5 CPU quotas: the
    throttled time read 79.7 / 49.5 % where the contention cost 79.4 / 48.0 %
    of the step)."""
    host = [f for f in found if f.cause in HOST_CAUSES
            or (f.cause == "need-evidence" and f.next is not None and f.next.kind == "stacks")]
    lost, used = cpu_lost(w)
    total = sum(f.explains_pct or 0.0 for f in host)
    taken = min(total, lost)
    if not host or used is None or taken <= 0:
        return None
    source = "cgroup"
    ev: list[Evidence] = []
    for name, text, src in CPU_READINGS:
        if (v := getattr(w, name)) is None:
            continue
        if name == used:
            source = src
            ev.insert(0, Evidence("host", f"the host loses {lost:.0f} % of the time waiting for "
                                          f"a CPU: {text.format(v=v)}, median — the reading "
                                          "used", w.end, src))
        else:
            ev.append(Evidence("host", f"{text.format(v=v)}, median", w.end, src))
    for f in host:
        before = f.explains_pct or 0.0
        cut = before * taken / total
        f.explains_pct = before - cut
        ev.append(Evidence("host", f"of the host's lateness ({pct(total)} of the time) "
                                   f"{pct(taken)} is waiting for a CPU: {f.cause} {pct(before)} "
                                   f"→ {pct(f.explains_pct)} of the time, {pct(cut)} is "
                                   "cpu-throttle's", w.end, source))
        f.evidence.append(Evidence("host", f"{pct(cut)} of the time is waiting for a CPU, "
                                           "counted under cpu-throttle", w.end, source))
    # the witnesses the parents' shares were read on (the capture's host wait, the
    # stacks' frame): cpu-throttle's share is part of theirs, and stays evidenced
    # by them when it takes all of a parent (which then falls below the list)
    seen = {(e.witness, e.source) for e in ev}
    for f in host:
        for e in f.evidence:
            if e.witness != "host" and (e.witness, e.source) not in seen:
                seen.add((e.witness, e.source))
                ev.append(Evidence(e.witness, f"the host's lateness, as {f.cause}: {e.text}",
                                   e.at, e.source))
    parents = ", ".join(sorted({f.cause for f in host}))
    return Finding(
        cause="cpu-throttle", explains_pct=taken, host=w.host,
        title=(f"the host is late and waits for a CPU {lost:.0f} % of the time (contended or "
               f"throttled): {pct(taken)} of the time, the part of the {parents} that is "
               "waiting for a CPU"),
        evidence=ev,
        fix=["a larger CPU quota (the container's cpu limit), fewer busy processes on the "
             "host, the engine's processes pinned to their own cores"])
