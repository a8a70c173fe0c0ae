"""Probe speed against the tools they wrap (not collected by pytest):

    python -m tests.bench.bench_probe_speed [--rounds 7]

All on localhost, baselines measured in the same run, rounds interleaved
(the box is shared), median of the rounds:

1. ``grep PATTERN PKG`` probe (through ProbeRunner and the local transport,
   like the cockpit) vs ``grep -rn PATTERN DIR`` over the package's
   directory — for packages installed in this venv, and for the whole
   site-packages seen as one namespace package ``sitepkgs`` (a symlink on
   the probe's PYTHONPATH; ~4,600 files, the nearest to torch's 11,608 a
   torch-free venv has). Target: probe <= 2 x grep + 0.3 s.
2. ``import MODULE`` probe vs ``python -c "import MODULE"`` (same python).
   Target: probe <= bare import + 0.3 s.
3. ``version PKG...`` probe with the venv's python: the shell reads the
   dist-info METADATA (no Python started) vs the same probe made to take
   its Python path (``PYTHONPATH`` set: the shell leaves it to
   importlib.metadata, what every version probe did before) and vs a bare
   ``python -c`` importlib.metadata lookup. Target: <= the bare lookup.
4. the CLI, wall clock: ``perftriage probe --host localhost which true``
   (a fresh process, as a user types it), next to ``python -c pass`` and
   ``sh -c true``. Target: <= 0.35 s.

Prints a table; the last column says whether the target was met.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from importlib.util import find_spec

from perftriage.core.store.config import HostConfig
from perftriage.services.hosts.registry import Host, HostRegistry
from perftriage.services.probes.runner import ProbeRunner
from perftriage.services.investigation.session import Session
from perftriage.transport.local import LocalTransport

PY = sys.executable
GREPS = [("class ", "pip"), ("def render", "textual"), ("zz_no_such_text", "pygments"),
         (r"def \w+_token", "pygments")]
IMPORTS = ["asyncssh", "textual.app", "json"]
VERSIONS = ["click", "msgspec", "textual"]
BARE_VERSION = ("from importlib import metadata\n"
                f"for n in {VERSIONS!r}: metadata.version(n)")
CLI = [shutil.which("perftriage") or os.path.join(os.path.dirname(PY), "perftriage"),
       "probe", "--host", "localhost", "which", "true"]


CHILD_CPU: list[float] = []  # CPU seconds of each wall() child: load-independent


def wall(argv: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CHILD_CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return took


def package_dir(name: str) -> str:
    spec = find_spec(name)
    assert spec is not None and spec.submodule_search_locations, name
    return list(spec.submodule_search_locations)[0]


async def probe_time(kind: str, args: list[str], preamble: str | None = None
                     ) -> tuple[float, str]:
    hc = HostConfig(name="localhost", python=PY, preamble=preamble)
    reg = HostRegistry()
    reg.add(Host("localhost", hc, LocalTransport("localhost", preamble), local=True))
    runner = ProbeRunner(Session(hosts=reg.names), reg)
    pid = runner.enqueue("localhost", kind, args, timeout=120)
    await runner.wait(pid)
    p = runner.session.state.probes[pid]
    assert p.status in ("ok", "no-match"), (kind, args, p.status, p.summary)
    return p.duration_s or 0.0, p.summary


def row(name: str, probe: list[float], base: list[float], limit, note: str = "") -> tuple:
    mp, mb = statistics.median(probe), statistics.median(base) if base else None
    target = limit(mb)
    return (name, mp, mb, target, "yes" if mp <= target else "NO", note)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    rounds = ap.parse_args().rounds
    rows = []
    ns = tempfile.mkdtemp(prefix="bench-probe-speed-")
    os.symlink(sysconfig.get_paths()["purelib"], os.path.join(ns, "sitepkgs"))
    cases = [(pattern, pkg, package_dir(pkg), None) for pattern, pkg in GREPS]
    cases += [(pattern, "sitepkgs", os.path.join(ns, "sitepkgs"), f"export PYTHONPATH={ns}")
              for pattern in ("class ", "zz_no_such_text")]
    for pattern, pkg, d, preamble in cases:
        probe, base, summary = [], [], ""
        for _ in range(rounds):
            base.append(wall(["grep", "-rn", "--", pattern, d + "/"]))
            t, summary = asyncio.run(probe_time("grep", [pattern, pkg], preamble))
            probe.append(t)
        rows.append(row(f"grep {pattern!r} {pkg}", probe, base, lambda b: 2 * b + 0.3,
                        summary[:40]))
    os.unlink(os.path.join(ns, "sitepkgs"))
    os.rmdir(ns)
    for mod in IMPORTS:
        probe, base = [], []
        for _ in range(rounds):
            base.append(wall([PY, "-c", f"import {mod}"]))
            probe.append(asyncio.run(probe_time("import", [mod]))[0])
        rows.append(row(f"import {mod}", probe, base, lambda b: b + 0.3))
    shell, python, bare = [], [], []
    for _ in range(rounds):
        bare.append(wall([PY, "-c", BARE_VERSION]))
        t, _summary = asyncio.run(probe_time("version", VERSIONS))
        shell.append(t)
        python.append(asyncio.run(probe_time("version", VERSIONS,
                                             "export PYTHONPATH=/nonexistent"))[0])
    rows.append(row(f"version {' '.join(VERSIONS)} (shell)", shell, bare, lambda b: b,
                    f"python path {statistics.median(python) * 1000:.0f} ms"))
    rows.append(row(f"version {' '.join(VERSIONS)} (python path)", python, bare,
                    lambda b: b + 0.3, "as before this change"))
    cli, py, sh, cpu = [], [], [], []
    for _ in range(rounds):
        py.append(wall([PY, "-c", "pass"]))
        sh.append(wall(["sh", "-c", "true"]))
        cli.append(wall(CLI))
        cpu.append(CHILD_CPU[-1])
    rows.append(row("CLI probe --host localhost which true", cli, py, lambda b: 0.35,
                    f"CPU {statistics.median(cpu) * 1000:.0f} ms; "
                    f"sh -c true {statistics.median(sh) * 1000:.0f} ms"))
    print(f"median of {rounds} rounds; load average {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} CPUs")
    print(f"{'case':<44} {'probe':>9} {'baseline':>9} {'target':>9}  met  note")
    for name, mp, mb, target, met, note in rows:
        base = f"{mb * 1000:7.0f}ms" if mb is not None else "-"
        print(f"{name:<44} {mp * 1000:7.0f}ms {base:>9} {target * 1000:7.0f}ms  {met:<4} {note}")
    print("baselines: grep rows `grep -rn PATTERN DIR`; import rows `python -c 'import M'`; "
          "version rows `python -c` importlib.metadata.version of each; CLI row `python -c pass`")


if __name__ == "__main__":
    main()
