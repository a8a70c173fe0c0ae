"""Cost of the hypotheses' checks (not collected by pytest).

    python -m tests.bench.bench_checks [--ticks 60] [--hosts 8] [--gpus-per-host 8]

A session with 64 GPUs (8 hosts x 8) whose readings change every second (a
host sample and GPM counters per host per tick, as the samplers send them)
and 200 checks, re-evaluated once a tick by the evaluator the cockpit runs
(``CheckMonitor``), the verdict changes applied through the reducer. Two
packs: 200 per-GPU checks (the worst case: 12,800 evaluations a second) and
200 checks mixed like the seed pack (per host, per GPU, ``spread``,
``avg`` over 30 s). The baseline, measured in the same run, is the same
ticks with the readings applied and no check. Figures are CPU time of this
process per tick; at one tick a second that is the share of one core.
Target: the checks' own cost <= 2 % of a core.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from tests.bench.table import print_table

TARGET_PCT_OF_CORE = 2.0

GPU_CHECKS = [
    "gpu.dram_busy_pct >= {a} and gpu.sm_active_pct < {b}",
    "gpu.util_pct >= 50 and gpu.sm_clock_mhz < 0.9 * gpu.sm_clock_max_mhz",
    "gpu.power_w < {a} * 7",
    "gpu.dram_busy_pct < {a} or gpu.temp_c > 85",
]
MIXED_CHECKS = [
    "gap.traffic_ratio >= 1.5",
    "gap.idle_pct >= {a} and gap.traffic_ratio < 1.5",
    "gap.nvlink_pct >= 50 and gap.dram_busy_pct < {b}",
    "spread(gpu.dram_busy_pct) >= 20",
    'avg(gpu.dram_busy_pct, "30s") < {a}',
    "gpu.util_pct >= 50 and gpu.sm_clock_mhz < 0.9 * gpu.sm_clock_max_mhz",
    'gap.verdict_kind matches "idle|wasted"',
    "host.cpu_pct > {a}",
]


def make_state(hosts: int, checks: list[str]):
    from perftriage.core.model import events as ev
    from perftriage.core.model.reducer import apply
    from perftriage.core.model.state import SessionState

    state = SessionState()
    for i, text in enumerate(checks):
        apply(state, ev.HypothesisAdded(hyp_id=f"h{i}", title=f"check {i}", check=text,
                                        for_s=5.0))
    for h in range(hosts):
        state.host(f"node{h:02d}")
    return state


class Walk:
    """Readings that drift (a random walk within bounds), as real counters do:
    uniform noise every second would flip most verdicts every tick."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.values: dict[tuple, float] = {}

    def uniform(self, lo: float, hi: float, *key) -> float:
        v = self.values.get(key)
        v = self.rng.uniform(lo, hi) if v is None else v + self.rng.gauss(0, (hi - lo) * 0.02)
        v = min(max(v, lo), hi)
        self.values[key] = v
        return v


def feed(state, now: float, hosts: int, per_host: int, walk: Walk) -> None:
    """One second of readings: a host sample, GPM counters and a live gap per host."""
    from perftriage.core.model import events as ev
    from perftriage.core.model.reducer import apply

    rng = walk
    for h in range(hosts):
        name = f"node{h:02d}"
        gpus = [ev.GpuSample(index=i, name="H200", util_pct=rng.uniform(0, 100, h, i, 1),
                             power_w=rng.uniform(100, 700, h, i, 2), power_limit_w=700.0,
                             temp_c=rng.uniform(30, 90, h, i, 3),
                             sm_clock_mhz=rng.uniform(900, 1980, h, i, 4),
                             sm_clock_max_mhz=1980.0) for i in range(per_host)]
        apply(state, ev.HostSample(t=now, host=name, cpu_pct=rng.uniform(0, 100, h), gpus=gpus))
        apply(state, ev.GpuCountersSample(t=now, host=name, source="nvml-gpm", gpus=[
            ev.GpuCounters(index=i, dram_busy_pct=rng.uniform(0, 100, h, i, 5),
                           sm_active_pct=rng.uniform(0, 100, h, i, 6), peak_gbs=4800.0)
            for i in range(per_host)]))
        kind = ["idle", "access", "wasted-traffic"][int(rng.uniform(0, 2.99, h, 7))]
        apply(state, ev.GapSample(t=now, host=name, gap=rng.uniform(1, 30, h, 8),
                                  traffic_ratio=rng.uniform(0.8, 3, h, 9),
                                  idle_pct=rng.uniform(0, 90, h, 10),
                                  nvlink_pct=rng.uniform(0, 90, h, 11),
                                  dram_busy_pct=rng.uniform(0, 90, h, 12), verdict_kind=kind))


def run(checks: list[str], ticks: int, hosts: int, per_host: int) -> tuple[list[float], int, int]:
    """CPU seconds per tick (readings + evaluation + applying the changes), the
    evaluations done and the verdict changes."""
    from perftriage.core.checks.verdicts import Evaluator
    from perftriage.core.model.reducer import apply

    walk = Walk(random.Random(7))
    state = make_state(hosts, checks)
    evaluator = Evaluator()
    per_tick, changes = [], 0
    for k in range(ticks):
        now = float(k + 1)
        t0 = time.process_time()
        feed(state, now, hosts, per_host, walk)
        if checks:
            for change in evaluator.tick(state, now):
                apply(state, change)
                changes += 1
        per_tick.append(time.process_time() - t0)
    evaluations = sum(len(slots) for slots in evaluator._slots.values()) * ticks
    return per_tick, evaluations, changes


def pack(templates: list[str], n: int) -> list[str]:
    rng = random.Random(3)
    return [templates[i % len(templates)].format(a=rng.randint(10, 90), b=rng.randint(10, 90))
            for i in range(n)]


def walk_vs_closures(checks: list[str], rounds: int = 200) -> None:
    """One evaluation of each check, tight loop: simpleeval's tree walk (the
    reference) vs the closures the evaluator runs (checks/fast.py)."""
    from perftriage.core.checks.expr import compile_check

    compiled = [compile_check(c) for c in checks]
    names = [{n: 42.0 for n in c.refs} for c in compiled]
    rows = []
    for label, call in (("simpleeval walk (reference)", lambda c, n: c.evaluate_plain(n)),
                        ("closures (the evaluator's hot path)", lambda c, n: c.fast(n))):
        t0 = time.process_time()
        for _ in range(rounds):
            for c, n in zip(compiled, names, strict=True):
                call(c, n)
        us = (time.process_time() - t0) / (rounds * len(compiled)) * 1e6
        rows.append((label, f"{us:.2f} µs", f"x 12,800 a second = {us * 12800 / 1e4:.2f} % of a core"))
    print_table("One evaluation of a per-GPU check (tight loop)", "per evaluation", rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ticks", type=int, default=60)
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--gpus-per-host", type=int, default=8)
    ap.add_argument("--checks", type=int, default=200)
    args = ap.parse_args()
    gpus = args.hosts * args.gpus_per_host
    cases = [("baseline: readings only, no check", []),
             (f"{args.checks} per-GPU checks", pack(GPU_CHECKS, args.checks)),
             (f"{args.checks} mixed checks (seed-like)", pack(MIXED_CHECKS, args.checks))]
    results = {}
    for name, checks in cases:
        run(checks, 3, args.hosts, args.gpus_per_host)  # warm-up
        results[name] = run(checks, args.ticks, args.hosts, args.gpus_per_host)
    base = statistics.median(results[cases[0][0]][0])
    rows = [(cases[0][0], f"{base * 1000:.2f} ms", f"{base * 100:.2f} % of a core")]
    worst = 0.0
    for name, _ in cases[1:]:
        per_tick, evaluations, changes = results[name]
        med = statistics.median(per_tick)
        own = med - base
        worst = max(worst, own * 100)
        per_eval = own / (evaluations / args.ticks) * 1e6 if evaluations else 0.0
        rows.append((name, f"{med * 1000:.2f} ms",
                     f"checks' own {own * 1000:.2f} ms = {own * 100:.2f} % of a core; "
                     f"{evaluations // args.ticks} evaluations/tick, {per_eval:.2f} µs each; "
                     f"{changes} verdict changes"))
    print_table(f"Checks over {gpus} GPUs, one tick a second, median of {args.ticks} ticks "
                "(CPU time per tick)", "per tick", rows)
    walk_vs_closures(pack(GPU_CHECKS, args.checks))
    verdict = "PASS" if worst <= TARGET_PCT_OF_CORE else "FAIL"
    print(f"\nworst: {worst:.2f} % of a core (target <= {TARGET_PCT_OF_CORE} %): {verdict}")


if __name__ == "__main__":
    main()
