"""The triage walk on a real server, taken by a script in a real terminal
(written for the device machine; runs GPU-less too).

    OUT=dir python3 scripts/h200_walk.py [--gpu-load GB] [CAUSE ...]
    (default: every cause in WALK)

For each planted cause: a real OpenSSH sshd on 127.0.0.1 (tests/support/sshd.py:
temporary host and client keys, a known_hosts the cockpit checks); the
SIMULATED SGLang server (``perftriage.simulator.sglang_sim --scenario CAUSE``)
started OUTSIDE the cockpit, its log written to a file that is both the
``[[hosts]]`` log and the ``[[servers]]`` log (where a restart once never
started); with
``--gpu-load GB``, a real decode-shaped load on the GPU beside it
(scripts/standins/decode_standin.py), so NVML over SSH reads a busy GPU.
Then a fresh cockpit in tmux, on that host through the sshd: ``Y``, then ⏎
(and ``G`` ⏎ where the Triage view or the main screen asks for the gap)
until the planted cause is the Triage view's top row, counting keys and
seconds. Then the fix: the outside server is stopped (as its owner would,
SIGTERM, no key), ``S`` with the override its fix line names, ⏎; pgrep says
whether a new server process runs on the host within 30 s; with no key, the
seconds from the fixed server's first decode line to "CAUSE resolved" on
screen. Writes $OUT/walk.json, $OUT/walk.md and $OUT/walk.tar.gz (each
cause's screens, transcript, server log, sshd log).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

# H200_REPO: the checkout whose perftriage runs (the script may be carried beside it)
REPO = Path(os.environ.get("H200_REPO") or Path(__file__).resolve().parents[1])
sys.path[:0] = [str(REPO / "tui"), str(REPO)]

from perftriage.simulator.scenarios import GAP_INPUTS, SCENARIOS  # noqa: E402
from tests.support.sshd import SshServer  # noqa: E402

OUT = Path(os.environ.get("OUT", "out"))
WALK = ("host-stall", "launch-bound", "kv-pressure", "kernel-below-roofline", "wasted-traffic",
        "healthy")
MAX_KEYS, CAUSE_S, RESOLVED_S, START_S = 8, 75.0, 65.0, 30.0
# a person reads the finding before fixing: the phase before the restart has this many seconds
DWELL_S = 20.0
# the Triage view's table: "│ high  launch-bound  85 %" (the first such row is the top)
ROW = re.compile(r"│ (high|moderate|lead) +([a-z-]+) +(\d+ %|n/a)")
TMUX = os.environ.get("H200_TMUX", "tmux")


def sh(*argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=False, **kw)


class Term:
    """The cockpit in tmux: keys counted, screens kept."""

    def __init__(self, sock: str, cmd: str) -> None:
        self.sock = sock
        self.keys: list[str] = []
        self.log: list[str] = []
        sh(TMUX, "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "160",
           "-y", "45", cmd)
        self.t0 = time.monotonic()

    def screen(self) -> str:
        return sh(TMUX, "-L", self.sock, "capture-pane", "-p", "-t", "t").stdout

    def press(self, *keys: str, count: bool = True) -> None:
        if count:
            self.keys.extend(keys)
        self.log.append(f"--- {time.monotonic() - self.t0:6.1f}s press {keys!r}\n{self.screen()}")
        sh(TMUX, "-L", self.sock, "send-keys", "-t", "t", *keys)

    def type(self, text: str) -> None:
        """Literal text (``-l --``: a leading ``--`` is text, not a tmux flag)."""
        self.log.append(f"--- {time.monotonic() - self.t0:6.1f}s type {text!r}\n{self.screen()}")
        sh(TMUX, "-L", self.sock, "send-keys", "-t", "t", "-l", "--", text)

    def wait(self, check, timeout: float) -> str | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.screen()
            if check(s):
                return s
            time.sleep(0.3)
        return None

    def close(self) -> None:
        self.log.append(f"--- {time.monotonic() - self.t0:6.1f}s last screen\n{self.screen()}")
        sh(TMUX, "-L", self.sock, "send-keys", "-t", "t", "Escape", "Escape", "q")
        time.sleep(1)
        sh(TMUX, "-L", self.sock, "send-keys", "-t", "t", "y")
        time.sleep(2)
        sh(TMUX, "-L", self.sock, "kill-server")


def top(screen: str) -> tuple[str, str] | None:
    m = ROW.search(screen)
    return (m.group(1), m.group(2)) if m else None


def runs_line(screen: str) -> str:
    return next((" ".join(ln.split()) for ln in screen.splitlines()
                 if "⏎ runs:" in ln or "⏎: nothing" in ln or "⏎ opens" in ln), "")


def to_the_cause(term: Term, cause: str) -> dict:
    """Y, then ⏎ on what the Triage view offers (G ⏎ where it asks for the
    gap), until ``cause`` is the top row; for healthy, until no row is high
    once a witness is in (a capture, the gap) or nothing is left to run."""
    gap_done = False
    while time.monotonic() - term.t0 < CAUSE_S and len(term.keys) <= MAX_KEYS:
        s = term.screen()
        flat = " ".join(s.split())
        t = top(s)
        no_high = not any(m.group(1) == "high" for m in map(ROW.search, s.splitlines()) if m)
        # the gap lead (cause wasted-traffic, asking for G) is not the cause found
        gap_lead = t is not None and t[0] == "lead" and "need the bytes a step must move" in flat
        if t and ((t[1] == cause and not gap_lead)
                  or (cause == "healthy" and "Findings, ranked" in s and no_high
                      and (gap_done or "⏎: nothing" in runs_line(s) or "capture prof" in s))):
            return {"reached": True, "top": f"{t[0]} {t[1]}"}
        if "active params" in s:  # the gap form: Enter records what it prefilled
            term.press("Enter")
            term.wait(lambda x: "active params" not in x, 20)
            gap_done = True
            continue
        asks_gap = not gap_done and ("G " in runs_line(s) or "⏎ runs: G" in flat
                                     or "press G" in flat or "(G)" in flat)
        if "Findings, ranked" not in s:
            if "triage " not in s:
                time.sleep(0.5)
                continue
            if asks_gap:
                term.press("G")
                term.wait(lambda x: "active params" in x, 20)
                continue
            term.press("Y")
            term.wait(lambda x: "Findings, ranked" in x and runs_line(x) != "", 20)
            continue
        if "⏎ opens the gap form" in flat:  # the gap lead on top: Enter opens the form
            term.press("Enter")
            term.wait(lambda x: "active params" in x, 20)
            continue
        if asks_gap:  # G in the Triage view; if it does not open the form there, Esc first
            term.press("G")
            if term.wait(lambda x: "active params" in x, 3) is None:
                term.press("Escape")
                term.wait(lambda x: "Findings, ranked" not in x, 10)
                term.press("G")
                term.wait(lambda x: "active params" in x, 20)
            continue
        line = runs_line(s)
        if "running since" in flat or "⏎: nothing" in line or "not now" in line:
            time.sleep(0.5)  # a witness runs, or nothing to run: wait for the next evaluation
            continue
        term.press("Enter")
        # its answer: what ⏎ runs changes once the witness landed and the triage re-evaluated
        term.wait(lambda x: runs_line(x) not in (line, "")
                  and "running since" not in " ".join(x.split()),
                  max(1.0, CAUSE_S - (time.monotonic() - term.t0)))
        time.sleep(1.0)  # a person reads the new finding before the next key
    t = top(term.screen())
    return {"reached": False, "top": f"{t[0]} {t[1]}" if t else None,
            "why": "out of keys" if len(term.keys) > MAX_KEYS else f"not on top in {CAUSE_S:.0f} s"}


def server_pids() -> set[int]:
    out = sh("pgrep", "-f", "perftriage.simulator.sglang_sim").stdout
    return {int(p) for p in out.split()}


def decode_lines(log: Path) -> int:
    return sum(1 for ln in log.read_text(errors="replace").splitlines() if "Decode batch" in ln)


def walk_one(cause: str, root: Path, gpu_load_gb: float) -> dict:
    """One cause: sshd, the server outside the cockpit, the cockpit in tmux."""
    sc = SCENARIOS[cause]
    root.mkdir(parents=True, exist_ok=True)
    sshd = SshServer(root / "sshd", alias="h200").start()
    log = root / "server.log"
    log.write_text("")
    port = sshd.port + 1000
    py = sys.executable
    command = (f"{py} -m perftriage.simulator.sglang_sim --rate 8 --startup-s 1.5"
               " --metrics-port {metrics_port} --tp 1 --moe-runner-backend {backend}"
               " --scenario {scenario}")
    args = {"metrics_port": str(port), "backend": "flashinfer_cutlass", "scenario": cause,
            "tp": "1", "gpu": "H200",
            "active_params_b": f"{GAP_INPUTS['active_params_b']:g}",
            "bits": f"{GAP_INPUTS['bits']:g}"}
    pypath = f"{REPO / 'tui'}:{os.environ.get('H200_SITE', '')}".rstrip(":")
    path = os.environ["PATH"]
    preamble = f"export PYTHONPATH={shlex.quote(pypath)} PATH={shlex.quote(path)}"
    toml = (f'[[hosts]]\nname = "h200"\nssh = "h200"\npreamble = {json.dumps(preamble)}\n'
            f'python = {json.dumps(py)}\nlogs = [{json.dumps(str(log))}]\n'
            f'metrics_url = "http://127.0.0.1:{port}/metrics"\n\n'
            f'[[servers]]\nname = "sglang-sim"\nhost = "h200"\ncommand = {json.dumps(command)}\n'
            f'log = {json.dumps(str(log))}\nworkdir = {json.dumps(str(root))}\n'
            f'metrics_url = "http://127.0.0.1:{port}/metrics"\n'
            "args = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in args.items()) + " }\n")
    cfg = root / "config.toml"
    cfg.write_text(toml)
    # the server, started outside the cockpit with the flags that plant the cause
    argv = shlex.split(command.format(**args)) + list(sc.flags)
    env = {**os.environ, "PYTHONPATH": pypath}
    with open(log, "ab") as fh:
        server = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True, cwd=root)
    row: dict = {"cause": cause, "gpu_load_gb": gpu_load_gb}
    deadline = time.monotonic() + 60
    while decode_lines(log) < 3 and time.monotonic() < deadline:
        time.sleep(0.3)
    sessions = root / "sessions"
    cmd = (f"env -u LD_LIBRARY_PATH -u COLUMNS -u LINES PYTHONPATH={shlex.quote(pypath)} "
           f"{py} -m perftriage --config {cfg} --ssh-config {sshd.ssh_config} "
           f"--sessions-dir {sessions}")
    smi = sh("nvidia-smi", "--query-gpu=name,utilization.gpu,memory.used",
             "--format=csv,noheader") if shutil.which("nvidia-smi") else None
    row["nvidia_smi"] = smi.stdout.strip() if smi is not None else "no nvidia-smi"
    term = Term(f"walk-{cause}", cmd)
    try:
        row.update(to_the_cause(term, cause))
        row["keys"] = len(term.keys)
        row["key_list"] = term.keys
        row["seconds_to_cause"] = round(time.monotonic() - term.t0, 1)
        if cause != "healthy" and row["reached"]:
            row.update(fix(term, cause, sc, server, log))
    finally:
        term.close()
        if server.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGTERM)
        for pid in server_pids():  # the restarted server (it runs under the sshd's session)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        sshd.stop()
        (root / "screens.txt").write_text("\n".join(term.log))
    return row


def fix(term: Term, cause: str, sc, server: subprocess.Popen, log: Path) -> dict:
    """Stop the outside server, S with the fix line's override, ⏎; then no key."""
    out: dict = {"override": sc.fix or "(none: without " + " ".join(sc.flags) + ")"}
    time.sleep(max(0.0, DWELL_S - (time.monotonic() - term.t0)))
    term.press("Escape", count=False)
    term.wait(lambda x: "Findings, ranked" not in x, 10)
    os.killpg(server.pid, signal.SIGTERM)  # its owner stops it (Ctrl-C in its terminal)
    server.wait(timeout=30)
    old = server_pids()
    decodes_before = decode_lines(log)
    term.press("S", count=False)
    if term.wait(lambda x: "server: start / restart" in x, 20) is None:
        return {**out, "restart_started": False, "resolved": False, "why": "no restart form"}
    if sc.fix:
        term.type(" " + sc.fix)
    term.press("Enter", count=False)
    pressed = time.monotonic()
    started = None
    while time.monotonic() - pressed < START_S:
        if server_pids() - old:
            started = time.monotonic() - pressed
            break
        time.sleep(0.2)
    out["restart_started"] = started is not None
    out["restart_started_s"] = round(started, 1) if started is not None else None
    if started is None:
        out.update(resolved=False, why=f"no server process on the host {START_S:.0f} s after S")
        return out
    first_decode = None
    deadline = time.monotonic() + 60
    while first_decode is None and time.monotonic() < deadline:
        if decode_lines(log) > decodes_before:
            first_decode = time.monotonic()
        time.sleep(0.2)
    if first_decode is None:
        out.update(resolved=False, why="the restarted server wrote no decode line in 60 s")
        return out
    want = f"{cause} resolved"
    seen = term.wait(lambda x: want in " ".join(x.split()), RESOLVED_S)
    out["resolved"] = seen is not None
    if seen is not None:
        out["seconds_to_resolved"] = round(time.monotonic() - first_decode, 1)
    else:
        out["why"] = f'no "{want}" on screen {RESOLVED_S:.0f} s after the first decode'
        term.press("Y", count=False)  # what the Triage view says of it, for the record
        term.wait(lambda x: "Findings, ranked" in x, 10)
        time.sleep(2)
    return out


def pack(root: Path, causes: list[str]) -> None:
    """$OUT/walk.tar.gz: each cause's screens, transcript, logs (at most 8 files come back)."""
    with tarfile.open(OUT / "walk.tar.gz", "w:gz") as tar:
        for name in ("gpu_load.log", "gpu_load.out"):
            if (root / name).exists():
                tar.add(root / name, arcname=name)
        for cause in causes:
            d = root / cause
            for name in ("screens.txt", "server.log", "config.toml", "sshd/sshd.log"):
                if (d / name).exists():
                    tar.add(d / name, arcname=f"{cause}/{name.replace('/', '_')}")
            for tr in sorted((d / "sessions").glob("**/*.jsonl")) if d.exists() else []:
                tar.add(tr, arcname=f"{cause}/transcript_{tr.name}")


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def table(rows: list[dict]) -> str:
    lines = ["| planted cause | keys | seconds to the right cause | top row then | "
             "restart started (s after ⏎) | seconds first decode → resolved | note |",
             "|---|---:|---:|---|---|---:|---|"]
    for r in rows:
        started = ("—" if "restart_started" not in r else
                   f"yes ({r['restart_started_s']})" if r["restart_started"] else "no")
        lines.append(
            f"| {r['cause']} | {r.get('keys', '—')} ({' '.join(r.get('key_list', []))}) | "
            f"{r.get('seconds_to_cause', '—') if r.get('reached') else 'not reached'} | "
            f"{r.get('top') or '—'} | {started} | {r.get('seconds_to_resolved', '—')} | "
            f"{r.get('why', '')} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("causes", nargs="*", default=list(WALK))
    ap.add_argument("--gpu-load", type=float, default=0.0,
                    help="GB of weights for a real decode load on the GPU beside the server")
    ap.add_argument("--root", default="/tmp/h200walk")
    a = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    root = Path(a.root)
    shutil.rmtree(root, ignore_errors=True)
    rows = []
    load = None
    if a.gpu_load:  # a real decode-shaped load on the GPU for the whole walk
        root.mkdir(parents=True, exist_ok=True)
        load = subprocess.Popen([sys.executable, str(REPO / "scripts/standins/decode_standin.py"),
                                 str(a.gpu_load), "900", str(root / "gpu_load.log")],
                                stdout=open(root / "gpu_load.out", "w"),  # noqa: SIM115
                                stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and "fired up" not in _read(root / "gpu_load.log"):
            time.sleep(0.5)
        print("GPU load:", _read(root / "gpu_load.log")[-300:], flush=True)
    for cause in a.causes:
        t = time.monotonic()
        try:
            row = walk_one(cause, root / cause, a.gpu_load)
        except Exception as exc:  # a cause that breaks is a row saying so
            row = {"cause": cause, "reached": False, "why": f"the walk broke: {exc!r}"}
        row["wall_s"] = round(time.monotonic() - t, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
        (OUT / "walk.json").write_text(json.dumps(rows, indent=1))
        (OUT / "walk.md").write_text(table(rows))
        pack(root, a.causes)  # after each cause: a call cut short still brings back what ran
    if load is not None:
        os.killpg(load.pid, signal.SIGTERM)
    pack(root, a.causes)
    print(table(rows))


if __name__ == "__main__":
    main()
