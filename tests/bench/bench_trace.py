"""Trace summary speed and memory (not collected by pytest).

    python -m tests.bench.bench_trace [--mb 300] [--gz]

Builds a ~300 MB Kineto trace by replicating the real H200 eager fixture's
events (timestamps shifted so the replicas follow each other), then in the
same run, each in a fresh process:

- baseline: a plain ``msgspec.json.decode`` of the file's bytes (dicts);
- perftriage: ``summarize_files`` (typed decode, buckets, intervals, idle,
  exposed communication, the idle breakdown), the work behind ``perftriage trace``;
- the same without the idle breakdown (the reader's events decoded without
  ``args``): what the breakdown adds (target: ≤ 1.3×);
- the same without the launching ops (``args`` without ``External id``, no
  CPU op kept): what the kernel detail's launcher join adds (per-call
  durations are kept in both).

Prints time and peak RSS of both and the ratio (target: ≤ 1.2× the
baseline's time, RSS ≤ 1 GB). Then the event loop's responsiveness while a
summary runs, as the cockpit would see it: the p95 / max lag of a 10 ms
ticker (a stand-in for key handling; target p95 ≤ 50 ms) with the parse in
a thread (msgspec holds the GIL) and in the child process the cockpit uses.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import msgspec

from tests.bench.table import print_table

FIXTURE = Path(__file__).parents[1] / "fixtures" / "profile" / "eager-TP-0.trace.json.gz"

BASELINE = (
    "import resource, sys, time, msgspec\n"
    "t = time.perf_counter()\n"
    "with open(sys.argv[1], 'rb') as f: data = f.read()\n"
    "doc = msgspec.json.decode(data)\n"
    "n = len(doc['traceEvents'])\n"
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, n)\n")

# The same summary with the idle breakdown's input left undecoded: events without
# ``args`` (so no stream, correlation or launch), as the reader was before it.
NO_IDLE = (
    "import typing, msgspec\n"
    "from perftriage.core.profile import kineto\n"
    "class E(msgspec.Struct, gc=False):\n"
    "    ph: str = ''\n    cat: str = ''\n    name: str = ''\n    ts: float = 0.0\n"
    "    dur: float = 0.0\n    pid: int | str = 0\n    args: typing.ClassVar[None] = None\n"
    "class T(msgspec.Struct, gc=False):\n    traceEvents: list[E]\n"
    "kineto._DECODER, kineto.ChromeTrace = msgspec.json.Decoder(T | list[E]), T\n")

# The summary with the idle breakdown but without the launching ops: ``args``
# decoded without ``External id``, no CPU op kept, no launch call joined.
NO_LAUNCHERS = (
    "import typing, msgspec\n"
    "from perftriage.core.profile import kineto\n"
    "class A(msgspec.Struct, gc=False):\n"
    "    stream: int | str | None = None\n    correlation: int | str | None = None\n"
    "    external_id: typing.ClassVar[None] = None\n"
    "class E(msgspec.Struct, gc=False):\n"
    "    ph: str = ''\n    cat: str = ''\n    name: str = ''\n    ts: float = 0.0\n"
    "    dur: float = 0.0\n    pid: int | str = 0\n    args: A | None = None\n"
    "class T(msgspec.Struct, gc=False):\n    traceEvents: list[E]\n"
    "kineto._DECODER, kineto.ChromeTrace = msgspec.json.Decoder(T | list[E]), T\n"
    "kineto.OP_CATS = frozenset()\n"
    "kineto.launcher_ids = lambda events, launches, ops: ({}, [])\n")

SUMMARY = (
    "import resource, sys, time\n"
    "from perftriage.core.profile.summarize import summarize_files\n"
    "t = time.perf_counter()\n"
    "s = summarize_files([sys.argv[1]])\n"
    "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,\n"
    "      sum(k.calls for k in s.kernels))\n")

# the summary's CPU seconds (user + system of this process): steadier than wall time
# on a shared box
SUMMARY_CPU = (
    "import sys, time\n"
    "from perftriage.core.profile.summarize import summarize_files\n"
    "t = time.process_time()\n"
    "summarize_files([sys.argv[1]])\n"
    "print(time.process_time() - t, 0, 0)\n")


def build(path: Path, mb: int) -> int:
    """Write a trace of about ``mb`` MB; returns its event count."""
    doc = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    events = doc.pop("traceEvents")
    stamped = [e for e in events if isinstance(e.get("ts"), (int, float))]
    span = max(e["ts"] + e.get("dur", 0) for e in stamped) - min(e["ts"] for e in stamped)
    head = msgspec.json.encode(doc)[:-1] + b', "traceEvents": ['
    # each replica's launches and kernels keep their own correlation ids
    corr_span = 1 + max((e.get("args") or {}).get("correlation", 0) for e in events
                        if isinstance((e.get("args") or {}).get("correlation", 0), int))
    n = 0
    with path.open("wb") as out:
        out.write(head)
        i = 0
        while out.tell() < mb * 1_000_000:
            shift = i * (span + 100.0)
            chunk = [_replica(e, shift, i * corr_span) for e in events]
            blob = msgspec.json.encode(chunk)[1:-1]
            out.write((b"," if i else b"") + blob)
            n += len(chunk)
            i += 1
        out.write(b"]}")
    return n


def _replica(e: dict, shift: float, corr_shift: int) -> dict:
    """An event of replica ``i``: later by ``shift`` µs, correlation ids moved on."""
    if "ts" in e:
        e = dict(e, ts=e["ts"] + shift)
    corr = (e.get("args") or {}).get("correlation")
    if isinstance(corr, int) and corr >= 0:
        e = dict(e, args=dict(e["args"], correlation=corr + corr_shift))
    if e.get("cat") == "ac2g" and isinstance(e.get("id"), int):
        e = dict(e, id=e["id"] + corr_shift)
    return e


def measure(script: str, path: Path) -> tuple[float, float, int]:
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[0]), float(out[1]), int(out[2])


async def _lag_while(work) -> tuple[float, float, float]:
    """(p95 ms, max ms, seconds) of a 10 ms ticker's lateness while ``work`` runs."""
    loop = asyncio.get_running_loop()
    lags: list[float] = []
    done = False

    async def ticker() -> None:
        while not done:
            t = loop.time()
            await asyncio.sleep(0.01)
            lags.append((loop.time() - t - 0.01) * 1000)

    tick = asyncio.ensure_future(ticker())
    t0 = loop.time()
    await work
    took = loop.time() - t0
    done = True
    await tick
    lags.sort()
    return lags[int(len(lags) * 0.95)], lags[-1], took


def responsiveness(path: Path) -> list[tuple[str, str, str]]:
    from perftriage.core.profile.summarize import summarize_files
    from perftriage.services.profile.worker import summarize_in_child

    rows = []
    for label, make in (("summary in a thread", lambda: asyncio.to_thread(summarize_files, [path])),
                        ("summary in the child process", lambda: summarize_in_child([path]))):
        p95, worst, took = asyncio.run(_lag_while(make()))
        rows.append((f"loop lag p95 / max, {label}", f"{p95:.0f} / {worst:.0f}",
                     f"ms; the summary took {took:.1f} s"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=300)
    ap.add_argument("--idle-rounds", type=int, default=3,
                    help="alternating pairs with and without the idle breakdown")
    ap.add_argument("--gz", action="store_true", help="also time the gzip-compressed file")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big-TP-0.trace.json"
        n = build(path, args.mb)
        size = path.stat().st_size / 1e6
        base_t, base_rss, base_n = measure(BASELINE, path)
        plain_t, plain_rss, _ = measure(NO_IDLE + SUMMARY, path)
        ours_t, ours_rss, kernels = measure(SUMMARY, path)
        walls, cpus, joins = [plain_t], [], []
        for _ in range(args.idle_rounds):  # alternating, each in a fresh process
            plain, idle_only, full = (measure(NO_IDLE + SUMMARY_CPU, path)[0],
                                      measure(NO_LAUNCHERS + SUMMARY_CPU, path)[0],
                                      measure(SUMMARY_CPU, path)[0])
            cpus.append((plain, idle_only))
            joins.append(full / idle_only)
            walls.append(measure(NO_IDLE + SUMMARY, path)[0] / measure(SUMMARY, path)[0])
        cpu_ratio = statistics.median(ours / plain for plain, ours in cpus)
        join_ratio = statistics.median(joins)
        wall_ratio = statistics.median([ours_t / plain_t, *(1 / w for w in walls[1:])])
        rows = [
            ("summary without the idle breakdown (events without args)", f"{plain_t:.2f}",
             f"{plain_rss:.0f} MiB peak RSS"),
            ("plain msgspec.json.decode (baseline)", f"{base_t:.2f}",
             f"{base_rss:.0f} MiB peak RSS, {base_n} events"),
            ("perftriage trace summary", f"{ours_t:.2f}",
             f"{ours_rss:.0f} MiB peak RSS, {kernels} kernel events"),
            ("ratio summary / baseline", f"{ours_t / base_t:.2f}", "target ≤ 1.2"),
            ("idle breakdown's cost: with it / without args, CPU", f"{cpu_ratio:.2f}",
             f"median of {len(cpus)} alternating runs; target ≤ 1.30: "
             f"{'met' if cpu_ratio <= 1.3 else 'NOT met'}"),
            ("launching ops' cost: summary / summary without them, CPU", f"{join_ratio:.2f}",
             f"median of {len(joins)}; the kernel detail's CPU op"),
            ("whole summary / without args, wall clock", f"{wall_ratio:.2f}",
             f"median of {len(cpus) + 1} pairs; RSS {ours_rss / plain_rss:.2f}x"),
        ]
        if args.gz:
            gz = path.with_suffix(".json.gz")
            gz.write_bytes(gzip.compress(path.read_bytes(), compresslevel=1))
            gz_t, gz_rss, _ = measure(SUMMARY, gz)
            rows.append(("perftriage summary of the .json.gz", f"{gz_t:.2f}",
                         f"{gz_rss:.0f} MiB peak RSS, {gz.stat().st_size / 1e6:.0f} MB file"))
        rows += responsiveness(path)
        print_table(f"Trace summary of a {size:.0f} MB Kineto trace ({n} events)", "seconds", rows)


if __name__ == "__main__":
    main()
