"""Continuing a named investigation: `perftriage --session NAME` on a
200k-event investigation, to the cockpit's first frame — against a plain
msgspec decode loop over the same file, same run.

    python -m tests.bench.bench_resume [EVENTS]      (default 200,000)

The investigation is the replay benchmark's realistic transcript
(tests/bench/long_session.py: an 8-GPU host and localhost at 1 Hz, decode-line
batches twice a second, probes, notes, hypotheses) made a named
investigation (its header says so). Each measure runs in its own process
(wall time, CPU and max RSS from wait4); every run of the cockpit appends a
segment, so each measure works on a fresh copy of the file.

- baseline: ``for line in file: msgspec decode`` (no reducer);
- restore: the whole investigation through the reducer
  (``investigations.restore``), what the cockpit does before its first frame;
- the cockpit's first frame: process start -> ``--session NAME`` opened and
  continued -> the headless app's main screen mounted and drawn (target: <= 2 s).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.bench.bench_replay import BASELINE  # the plain decode loop, the same in both
from tests.bench.long_session import generate
from tests.bench.table import print_table

PY = sys.executable
NAME = "bench: moe gap"

RESTORE = """
import sys, time
from pathlib import Path
t0 = time.perf_counter()
from perftriage.core.store import investigations
r = investigations.restore(Path(sys.argv[1]), logs=False)
fg = time.perf_counter() - t0
t1 = time.perf_counter()
investigations.adopt_logs(r.state, investigations.restore_logs(Path(sys.argv[1]), r.log_offsets))
print(fg, time.perf_counter() - t1, r.continuation.events)
"""

FIRST_FRAME = """
import asyncio, sys, time
from pathlib import Path
t0 = time.perf_counter()
from perftriage.ui.app import PerftriageApp
from perftriage.cli.globals import Globals
from perftriage.cli.launch import build_cockpit

async def main():
    g = Globals(sessions_dir=Path(sys.argv[1]), session=sys.argv[2], hosts=["localhost"])
    cockpit = build_cockpit(g)
    app = PerftriageApp(cockpit)
    async with app.run_test(size=(160, 45)) as pilot:
        while not app.screen.is_mounted or type(app.screen).__name__ != "MainScreen":
            await asyncio.sleep(0.005)
        await pilot.pause()
        first, cpu = time.perf_counter() - t0, time.process_time()
        state = cockpit.session.state
        print(first, cpu, len(state.segments), len(state.hypotheses), state.event_count)

asyncio.run(main())
"""


def run(argv: list[str]) -> tuple[float, float, float, str]:
    """Wall seconds, CPU seconds, max RSS MiB of that process, its stdout."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    if code != 0:
        raise SystemExit(f"{argv[:3]} failed ({code}): {out.decode()[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.decode()


def investigation(n: int) -> Path:
    """The template investigation of ``n`` events (generated once, reused)."""
    base = Path(os.environ.get("PERFTRIAGE_BENCH_DIR", "/tmp/perftriage-bench")) / "resume"
    base.mkdir(parents=True, exist_ok=True)
    template = base / f"template-{n}.jsonl"
    if not template.exists():
        raw = base / "raw.jsonl"
        raw.unlink(missing_ok=True)
        generate(raw, n - 1)
        lines = raw.read_bytes().split(b"\n", 1)
        header = json.loads(lines[0])
        header.update(name=NAME, investigation=True)
        segment = json.dumps({"type": "segment.started", "started_at": header["started_at"],
                              "hosts": header["hosts"], "t": 0.0, "wall": 1796000000.0},
                             separators=(",", ":"))
        template.write_bytes(json.dumps(header).encode() + b"\n" + segment.encode() + b"\n"
                             + lines[1])
        raw.unlink()
    return template


def fresh_copy(template: Path) -> Path:
    from perftriage.core.store import investigations

    sessions = template.parent / "sessions"
    shutil.rmtree(sessions, ignore_errors=True)
    sessions.mkdir()
    target = investigations.path_for(NAME, sessions)
    shutil.copyfile(template, target)
    return target


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    template = investigation(n)
    size = template.stat().st_size / 2**20
    rows: list[tuple[str, str, str]] = []

    wall, cpu, rss, out = run([PY, "-c", BASELINE, str(template)])
    base = wall
    rows.append((f"baseline: msgspec decode loop, {int(out)} events ({size:.0f} MiB)",
                 f"{wall:.2f}", f"CPU {cpu:.2f} s"))
    wall, cpu, rss, out = run([PY, "-c", RESTORE, str(template)])
    fg, bg, events = out.split()
    rows.append((f"restore before the first frame: {events} events read, all but log batches "
                 "and old host samples applied", f"{float(fg):.2f}",
                 f"{float(fg) / base:.2f}× baseline (in-process, imports excluded)"))
    rows.append(("restore after the first frame (a thread): every log event applied",
                 f"{float(bg):.2f}", f"{float(bg) / base:.2f}× baseline"))

    def first_frames(name: str, prepare) -> tuple[list[float], list[float], str]:
        walls, cpus, last = [], [], ""
        for _ in range(3):
            directory = prepare()
            _, _, _, last = run([PY, "-c", FIRST_FRAME, str(directory), name])
            first, cpu_s, *_ = last.split()
            walls.append(float(first))
            cpus.append(float(cpu_s))
        return sorted(walls), sorted(cpus), last

    def empty_dir() -> Path:
        sessions = template.parent / "sessions"
        shutil.rmtree(sessions, ignore_errors=True)
        sessions.mkdir()
        return sessions

    walls, cpus, _ = first_frames("a new one", empty_dir)
    new_wall = walls[1]
    rows.append(("`--session NAME`, a new investigation: first frame (median of 3, from "
                 "process start)", f"{walls[1]:.2f}",
                 f"CPU {cpus[1]:.2f} s; runs {', '.join(f'{w:.2f}' for w in walls)}"))
    walls, cpus, last = first_frames(NAME, lambda: fresh_copy(template).parent)
    _, _, segments, hyps, count = last.split()
    assert int(segments) == 2 and int(count) >= n, last  # continued, not started anew
    rows.append((f"`--session NAME` continued, {n // 1000}k events: first frame (median of 3, "
                 f"from process start; {hyps} hypotheses restored)", f"{walls[1]:.2f}",
                 f"CPU {cpus[1]:.2f} s; {walls[1] / base:.2f}× baseline, "
                 f"+{walls[1] - new_wall:.2f} s over a new one; runs "
                 f"{', '.join(f'{w:.2f}' for w in walls)}; target <= 2 s"))
    print_table(f"Continuing a {n // 1000}k-event investigation", "s", rows)


if __name__ == "__main__":
    main()
