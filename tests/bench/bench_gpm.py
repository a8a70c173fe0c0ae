"""Cost of the local GPM counter source (not collected by pytest).

    python -m tests.bench.bench_gpm [--gpus 8] [--seconds 10] [--real]

Without ``--real``: a fake 8-device NVML (tests/support/fake_pynvml.py) so the cost
measured is perftriage's own (sample pair, metrics decode, GpuCounters,
stuck check, the event), at 1 Hz for ``--seconds`` in a real asyncio loop,
as CPU time of this process. The baseline, measured in the same run, is the
same loop doing nothing but sleeping at 1 Hz. A second table times one
sample in a tight loop (µs per sample). Target: <= 1 % of one core.

With ``--real``: the same on this machine's real NVML (the H200 run).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time

TARGET_PCT_OF_CORE = 1.0


async def loop_cost(seconds: float, source=None) -> tuple[float, int]:
    """CPU seconds used by this process over ``seconds`` of a 1 Hz loop."""
    n = 0
    t_cpu = time.process_time()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        await asyncio.sleep(1.0)
        if source is not None:
            source.emit(source.sample())
            n += 1
    return time.process_time() - t_cpu, n


def tight(source, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        source.sample()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def make_source(gpus: int, real: bool):
    from perftriage.services.sources.gpm_local import LocalGpmSource, NvmlGpm

    events: list = []
    src = LocalGpmSource("bench", events.append)
    nvml = None
    if not real:
        from tests.support.fake_pynvml import FakeNvml

        nvml = FakeNvml(n=gpus)
    src.reader = NvmlGpm(nvml)
    if src.reader.error:
        sys.exit(f"no GPM here: {src.reader.error}")
    src.reader.read()
    return src, events


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--real", action="store_true", help="this machine's NVML instead of the fake")
    ap.add_argument("--json", dest="json_out", help="also write the figures here")
    args = ap.parse_args()
    src, events = make_source(args.gpus, args.real)
    n_gpus = len(src.reader.devices)
    base_cpu, _ = asyncio.run(loop_cost(args.seconds))
    cpu, n = asyncio.run(loop_cost(args.seconds, src))
    us = tight(src, 2000 if not args.real else 200)
    base_pct = base_cpu / args.seconds * 100
    pct = cpu / args.seconds * 100
    last = events[-1]
    rows = [
        ("loop at 1 Hz, nothing sampled (baseline)", f"{base_pct:.3f} %", "-"),
        (f"loop at 1 Hz, {n_gpus} GPUs sampled ({n} samples)", f"{pct:.3f} %",
         f"{pct - base_pct:+.3f} %"),
        ("one sample, tight loop (median / p95)",
         f"{statistics.median(us):.0f} / {sorted(us)[int(len(us) * 0.95)]:.0f} µs",
         f"= {statistics.median(us) / 1e4:.4f} % of a core at 1 Hz"),
    ]
    mode = "real NVML" if args.real else f"fake NVML, {n_gpus} devices"
    print(f"GPM source cost ({mode}, {args.seconds:g} s each)")
    w = max(len(r[0]) for r in rows)
    for r in rows:
        print(f"  {r[0]:<{w}}  {r[1]:>18}  {r[2]}")
    dram = [g.dram_busy_pct for g in last.gpus]
    print(f"  last sample: source={last.source} DRAM %={dram}")
    verdict = "OK" if pct - base_pct <= TARGET_PCT_OF_CORE else "OVER"
    print(f"  target <= {TARGET_PCT_OF_CORE} % of a core above baseline: {verdict}")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"mode": mode, "gpus": n_gpus, "seconds": args.seconds,
                       "baseline_pct": base_pct, "pct": pct, "sample_us_median": statistics.median(us),
                       "sample_us_p95": sorted(us)[int(len(us) * 0.95)], "last_dram_pct": dram}, f)


if __name__ == "__main__":
    main()
