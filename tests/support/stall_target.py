"""A real Python process with a planted host stall, for the ``stacks`` probe's
tests and benches: a decode-like loop whose every step spends ``--stall-ms``
(default 4) burning CPU in a function no other code is named like,
``perftriage_planted_stall_q7x``, then a short step and a 1 ms sleep; a
second thread waits idle. Prints ``ready PID`` once, then with ``--report``
one line ``steps N SECONDS CPU_SECONDS`` a second (the loop's own rate and
CPU time, for the overhead bench).

    python3 -m tests.support.stall_target [--stall-ms 4] [--report] [--tag WORD]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

STALL_FUNCTION = "perftriage_planted_stall_q7x"


def perftriage_planted_stall_q7x(ms: float) -> bytes:
    t = time.perf_counter()
    x = b"x"
    while time.perf_counter() - t < ms / 1000.0:
        x = hashlib.sha256(x).digest()
    return x


def decode_step_q7x() -> int:
    s = 0
    for i in range(2000):
        s += i * i
    return s


def idle_waiter_q7x() -> None:
    ev = threading.Event()
    while True:
        ev.wait(1.0)


@contextlib.contextmanager
def running(*extra: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A stall target running for the block: (its process, the tag only its
    command line holds); killed at the end."""
    tag = f"q7x-{uuid.uuid4().hex[:12]}"
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.stall_target", "--tag", tag,
                             *extra], cwd=Path(__file__).parents[2], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("ready")
        yield proc, tag
    finally:
        proc.kill()
        proc.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stall-ms", type=float, default=4.0)
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--tag", default="", help="a word only this process's command line holds")
    args = ap.parse_args(argv)
    threading.Thread(target=idle_waiter_q7x, name="waiter", daemon=True).start()
    print(f"ready {os.getpid()}", flush=True)
    steps, mark, cpu = 0, time.monotonic(), time.process_time()
    while True:
        decode_step_q7x()
        if args.stall_ms > 0:
            perftriage_planted_stall_q7x(args.stall_ms)
        time.sleep(0.001)
        steps += 1
        now = time.monotonic()
        if args.report and now - mark >= 1.0:
            used = time.process_time()
            sys.stdout.write(f"steps {steps} {now - mark:.4f} {used - cpu:.4f}\n")
            sys.stdout.flush()
            steps, mark, cpu = 0, now, used


if __name__ == "__main__":
    sys.exit(main())
