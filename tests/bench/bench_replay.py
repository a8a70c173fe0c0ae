"""Long sessions: sessions listing, --at, the player's index and seeks,
report — against a plain msgspec decode loop over the same file, same run.

    python -m tests.bench.bench_replay [EVENTS]      (default 1,000,000)

Generates a realistic transcript (tests/bench/long_session.py: one 8-GPU
host and localhost sampled at 1 Hz, decode-line batches twice a second,
probes, notes, hypotheses) of EVENTS events and one of 200k events without a
summary line (as a crash leaves it), then runs each measure in its own
process (wall time and that process's max RSS, from wait4):

- baseline: ``for line in file: msgspec decode`` over the EVENTS file;
- ``perftriage sessions`` over 100 files (50 links to each transcript), as a
  command and in-process;
- ``perftriage replay F200k --at end --json`` (first open, no summary);
- player: open + first frame state, background index of the whole file,
  then 40 random seeks and every marker jump (max and median);
- ``perftriage report F -o /dev/null``.

The files are kept in $PERFTRIAGE_BENCH_DIR (default /tmp/perftriage-bench)
and reused when they exist with the right size.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.bench.long_session import generate

HERE = Path(__file__).resolve().parent
PY = sys.executable

BASELINE = """
import sys, msgspec
from perftriage.core.model import events as ev
dec = ev._decoder
n = 0
with open(sys.argv[1], 'rb') as fh:
    fh.readline()
    for line in fh:
        try:
            dec.decode(line)
            n += 1
        except msgspec.DecodeError:
            pass
print(n)
"""

PLAYER = """
import json, random, sys, time
t0 = time.perf_counter()
from perftriage.core.replay.timeline import Timeline
from perftriage.core.replay.player import Player
tl = Timeline.open(sys.argv[1])
player = Player(tl)
player.seek_time(0.0)
first = time.perf_counter() - t0
t1 = time.perf_counter()
tl.scan()
index = time.perf_counter() - t1
rng = random.Random(15)
seeks, seeks_cpu = [], []
for _ in range(40):
    target = rng.randrange(len(tl) + 1)
    t, c = time.perf_counter(), time.process_time()
    player.seek(target)
    seeks.append(time.perf_counter() - t)
    seeks_cpu.append(time.process_time() - c)
player.seek(0)
marks = []
for _ in range(200):
    t = time.perf_counter(); m = player.next_marker(); marks.append(time.perf_counter() - t)
    if m is None:
        break
back = []
for _ in range(50):
    t = time.perf_counter(); player.step(-1); back.append(time.perf_counter() - t)
print(json.dumps({"first": first, "index": index, "seeks": seeks, "seeks_cpu": seeks_cpu,
                  "marks": marks,
                  "back": back, "events": len(tl), "keyframes": len(tl.keyframes),
                  "markers": len(tl.markers)}))
"""


CPU: dict[str, float] = {}  # argv[-1] -> CPU seconds of the last run (user + system)

FIRST_FRAME = """
import asyncio, sys, time
t0 = time.perf_counter()
from perftriage.ui.app import PerftriageApp
from perftriage.services.cockpit import Cockpit
from perftriage.services.hosts.registry import HostRegistry
from perftriage.services.investigation.replay import Replayer

async def main():
    replayer = Replayer(sys.argv[1])
    replayer.player.seek_time(0.0)
    app = PerftriageApp(Cockpit(registry=HostRegistry(), session=replayer.session))
    async with app.run_test(size=(160, 45)) as pilot:
        while type(app.screen).__name__ != "ReplayScreen" or not app.screen.is_mounted:
            await asyncio.sleep(0.005)
        await pilot.pause()
        print(time.perf_counter() - t0)
        replayer.close()

asyncio.run(main())
"""


def run(argv: list[str]) -> tuple[float, float, str]:
    """Wall seconds, max RSS MiB of that process, stdout (its CPU seconds in CPU)."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout.read()  # type: ignore[union-attr]
    err = proc.stderr.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    CPU["last"] = usage.ru_utime + usage.ru_stime
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv} failed ({proc.returncode}): {err.decode()[-2000:]}")
    return wall, usage.ru_maxrss / 1024, out.decode()


def files(n: int) -> tuple[Path, Path, Path]:
    base = Path(os.environ.get("PERFTRIAGE_BENCH_DIR", "/tmp/perftriage-bench"))
    base.mkdir(parents=True, exist_ok=True)
    big = base / f"20261128-092000-long-{n}.jsonl"
    crashed = base / "20261127-092000-crashed-200000.jsonl"
    for path, count, clean in ((big, n, True), (crashed, 200_000, False)):
        if not path.exists():
            t = time.perf_counter()
            generate(path, count, close_cleanly=clean)
            print(f"generated {path.name}: {path.stat().st_size / 2**20:.0f} MiB "
                  f"in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    listing = base / "listing"
    if not listing.exists():
        listing.mkdir()
        for i in range(50):
            (listing / f"2026112{i % 10}-0{i:05d}-long.jsonl").symlink_to(big)
            (listing / f"2026110{i % 10}-0{i:05d}-crashed.jsonl").symlink_to(crashed)
    return big, crashed, listing


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    big, crashed, listing = files(n)
    cli = [PY, "-m", "perftriage"]
    rows: list[tuple[str, ...]] = []

    def cpu() -> str:
        return f"{CPU['last']:.2f} s"


    wall, rss, out = run([PY, "-c", BASELINE, str(big)])
    base_wall = wall
    rows.append((f"baseline: msgspec decode loop, {int(out)} events", f"{wall:.2f} s", cpu(),
                 f"{rss:.0f} MiB", ""))
    wall, rss, _ = run([PY, "-c", BASELINE, str(crashed)])
    base200 = wall
    rows.append(("baseline: msgspec decode loop, 200k events", f"{wall:.2f} s", cpu(),
                 f"{rss:.0f} MiB", ""))

    wall, rss, out = run([*cli, "--sessions-dir", str(listing), "sessions"])
    assert out.count("\n") == 101, out[:500]
    rows.append(("`sessions`, 100 files (50 × 1M with summary, 50 × 200k without)",
                 f"{wall:.2f} s", cpu(), f"{rss:.0f} MiB", "<= 0.5 s per 100 files"))
    t = time.perf_counter()
    from perftriage.core.store import session_files

    described = [session_files.describe(p) for p in session_files.session_files(listing)]
    assert len(described) == 100 and described[-1].events is None
    rows.append(("  the same in-process (no interpreter start): headers + tails",
                 f"{time.perf_counter() - t:.3f} s", "", "", ""))
    wall, rss, out = run([*cli, "replay", str(crashed), "--at", "end", "--json"])
    rows.append(("`replay --at end --json`, 200k events, no summary (first open)",
                 f"{wall:.2f} s ({wall / base200:.2f}× baseline)", cpu(), f"{rss:.0f} MiB",
                 "<= 5 s"))
    wall, rss, out = run([*cli, "replay", str(big), "--at", "end", "--json"])
    rows.append((f"`replay --at end --json`, {n // 1000}k events", f"{wall:.2f} s "
                 f"({wall / base_wall:.2f}× baseline)", cpu(), f"{rss:.0f} MiB", ""))

    wall, rss, out = run([PY, "-c", FIRST_FRAME, str(big)])
    rows.append(("`replay` UI: first frame of the replay screen (headless app, from "
                 "process start)", f"{float(out):.2f} s", cpu(), f"{rss:.0f} MiB", "<= 2 s"))
    wall, rss, out = run([PY, "-c", PLAYER, str(big)])
    p = json.loads(out)
    rows.append(("player: open + first frame state (t = 0), imports included",
                 f"{p['first']:.3f} s", "", "", "<= 2 s"))
    rows.append((f"player: index the whole file ({p['keyframes']} keyframes, {p['markers']} "
                 "markers; in the background in the UI)",
                 f"{p['index']:.1f} s ({p['index'] / base_wall:.1f}× baseline)",
                 f"{cpu()} (whole run)", f"{rss:.0f} MiB (whole run)", "RSS <= 300 MB"))
    for label, key in (("40 random seeks", "seeks"), ("next-marker jumps", "marks"),
                       ("one event back (50×)", "back")):
        xs = p[key]
        cpu_xs = p.get(f"{key}_cpu")
        rows.append((f"player: {label}, median / max", f"{statistics.median(xs) * 1000:.0f} / "
                     f"{max(xs) * 1000:.0f} ms",
                     f"{statistics.median(cpu_xs) * 1000:.0f} / {max(cpu_xs) * 1000:.0f} ms"
                     if cpu_xs else "", "", "<= 500 ms"))
    wall, rss, _ = run([*cli, "report", str(big), "-o", os.devnull])
    rows.append((f"`report`, {n // 1000}k events", f"{wall:.2f} s ({wall / base_wall:.2f}× baseline)",
                 cpu(), f"{rss:.0f} MiB", "<= 10 s"))

    size = big.stat().st_size / 2**20
    print(f"\n{n:,} events, {size:.0f} MiB; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}\n")
    print("| measure | wall | CPU | max RSS | target |\n|---|---:|---:|---:|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
