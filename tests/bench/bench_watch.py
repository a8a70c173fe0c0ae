"""How soon a watcher shows what the cockpit records: `perftriage watch`.

    python -m tests.bench.bench_watch [NOTES]      (default 50)

A recording session (the real Session and TranscriptWriter, its writer
thread) in one process emits a note every 0.1-0.4 s, stamped with the wall
time; a Watcher in another process ticks as the watch screen does (every
1/20 s) and records when each note reaches its state. Baseline in the same
run: the time until the note's bytes are in the file at all (a reader polling
the file size every millisecond): what any follower must wait for.
Target: every note in the watcher's state within 1 s (the screen draws it at
its next frame, 1/20 s later).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.table import print_table

WRITER = """
import random, sys, time
from pathlib import Path
from perftriage.core.model import events as ev
from perftriage.services.investigation.named import open_investigation
s = open_investigation("bench watch", Path(sys.argv[1]), ["localhost"])
print("ready", flush=True)
sys.stdin.readline()
rng = random.Random(3)
for i in range(int(sys.argv[2])):
    time.sleep(rng.uniform(0.1, 0.4))
    s.emit(ev.NoteAdded(text=f"{i} {time.time():.6f}"))
time.sleep(0.5)
s.close()
"""

WATCHER = """
import json, sys, time
from pathlib import Path
from perftriage.core.store import investigations as inv
from perftriage.services.investigation.watch import Watcher
path = inv.path_for("bench watch", Path(sys.argv[1]))
w = Watcher(path)
w.go_live()
n, seen, size_seen = int(sys.argv[2]), {}, {}
last_size = path.stat().st_size
print("ready", flush=True)
deadline = time.time() + 60
next_tick = time.monotonic()
while len(seen) < n and time.time() < deadline:
    now = time.monotonic()
    if now >= next_tick:
        w.tick()
        next_tick = now + 1 / 20
        for note in w.session.state.notes[len(seen):]:
            i, stamp = note.text.split()
            seen[int(i)] = time.time() - float(stamp)
    size = path.stat().st_size
    if size != last_size:
        last_size = size
        size_seen[len(size_seen)] = time.time()
    time.sleep(0.001)
print(json.dumps({"watcher": seen, "bytes": size_seen}))
"""


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    with tempfile.TemporaryDirectory() as tmp:
        writer = subprocess.Popen([sys.executable, "-c", WRITER, tmp, str(n)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert writer.stdout is not None and writer.stdin is not None
        assert writer.stdout.readline().strip() == "ready"
        watcher = subprocess.Popen([sys.executable, "-c", WATCHER, tmp, str(n)],
                                   stdout=subprocess.PIPE, text=True)
        assert watcher.stdout is not None
        assert watcher.stdout.readline().strip() == "ready"
        writer.stdin.write("go\n")
        writer.stdin.flush()
        out = json.loads(watcher.stdout.read())
        writer.wait()
        watcher.wait()
        text = (Path(tmp) / "bench%20watch.jsonl").read_text()
    stamps = [float(json.loads(line)["text"].split()[1]) for line in text.splitlines()
              if '"type":"note"' in line]
    lat = sorted(out["watcher"].values())
    # the file's growth right after each note (the writer gathers for 50 ms)
    grow = sorted(out["bytes"].values())
    to_disk = [min((g for g in grow if g >= s), default=float("nan")) - s for s in stamps]
    to_disk = sorted(x for x in to_disk if x == x)

    def q(xs: list[float], p: float) -> float:
        return xs[min(len(xs) - 1, int(p * len(xs)))]

    rows = [
        (f"baseline: note emitted -> its bytes in the file ({len(to_disk)} notes)",
         f"{statistics.median(to_disk) * 1000:.0f}", f"p95 {q(to_disk, .95) * 1000:.0f} ms, "
         f"max {max(to_disk) * 1000:.0f} ms"),
        (f"watcher: note emitted -> in the watcher's state ({len(lat)} of {n} notes)",
         f"{statistics.median(lat) * 1000:.0f}", f"p95 {q(lat, .95) * 1000:.0f} ms, max "
         f"{max(lat) * 1000:.0f} ms; target every note <= 1000 ms"),
    ]
    print_table("perftriage watch: from the cockpit's event to the watcher", "ms (median)", rows)


if __name__ == "__main__":
    main()
