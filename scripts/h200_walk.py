"""The triage walk on a real server, taken by a script in a real terminal
(written for the device machine; runs GPU-less too).

    OUT=dir python3 scripts/h200_walk.py [--gpu-load GB] [--floor-gbs GBS] [CAUSE ...]
    (default: every cause in WALK)

For each planted cause: a real OpenSSH sshd on 127.0.0.1 (tests/support/sshd.py:
temporary host and client keys, a known_hosts the cockpit checks); the
SIMULATED SGLang server (``perftriage.simulator.sglang_sim --scenario CAUSE``)
started OUTSIDE the cockpit, its log written to a file that is both the
``[[hosts]]`` log and the ``[[servers]]`` log (where a restart once never
started); with
``--gpu-load GB``, a real decode-shaped load on the GPU beside it
(scripts/standins/decode_standin.py), so NVML over SSH reads a busy GPU.
``--floor-gbs GBS`` (the real GPU's bandwidth) starts the simulator, outside
and in the ``[[servers]]`` template, with ``--floor-ms`` = the simulated
model's bytes a step (BYTES_PER_STEP_GB) over GBS: the step the simulator
takes is then its scenario's gap times the floor the gap form computes from
that GPU (without it: the simulator's own eight GPUs' floor, 1.39 ms, and
beside one H200 a gap under 1x). With ``--gpu-load``, wasted-traffic's row
runs the REAL stand-in as its server instead of the simulator (a planted
double read is not in a real GPU's DRAM counters; the stand-in's upcast is):
``decode_standin.py GB 900 LOG slow`` outside the cockpit, the background
load stopped for that row (the row's server is the GPU's load), the gap
form's bytes from the profile's ``weights_gb`` (what the stand-in logs), no
/metrics; its fix is ``S`` with ``phase=fast`` (one bf16 GEMV a token).
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
from dataclasses import dataclass
from pathlib import Path

# H200_REPO: the checkout whose perftriage runs (the script may be carried beside it)
REPO = Path(os.environ.get("H200_REPO") or Path(__file__).resolve().parents[1])
sys.path[:0] = [str(REPO / "tui"), str(REPO)]

from perftriage.simulator.scenarios import BYTES_PER_STEP_GB, GAP_INPUTS, SCENARIOS  # noqa: E402
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
STANDIN = REPO / "scripts/standins/decode_standin.py"
# the cause whose row runs the real stand-in as its server with --gpu-load
STANDIN_CAUSE = "wasted-traffic"
SIM = "perftriage.simulator.sglang_sim"


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


def server_pids(pattern: str) -> set[int]:
    out = sh("pgrep", "-f", pattern).stdout
    return {int(p) for p in out.split()}


def decode_lines(log: Path) -> int:
    return sum(1 for ln in log.read_text(errors="replace").splitlines() if "Decode batch" in ln)


@dataclass
class Server:
    """A row's server: its ``[[servers]]`` name, command template and args,
    the outside start's planting flags, what ``S`` is given for the fix, the
    pgrep pattern of its processes and its /metrics port (none: no /metrics)."""

    name: str
    command: str
    args: dict[str, str]
    planted: tuple[str, ...]
    fix: str
    pattern: str
    metrics_port: int | None
    startup_s: float = 60.0  # for its first decode lines


def sim_server(cause: str, port: int, floor_gbs: float) -> Server:
    """The SIMULATED SGLang server planting ``cause``; with ``floor_gbs``, its
    step on that GPU's floor (the simulated model's bytes a step over it)."""
    sc = SCENARIOS[cause]
    floor = f" --floor-ms {BYTES_PER_STEP_GB / floor_gbs * 1000.0:.4f}" if floor_gbs else ""
    command = (f"{sys.executable} -m {SIM} --rate 8 --startup-s 1.5"
               " --metrics-port {metrics_port} --tp 1" + floor +
               " --moe-runner-backend {backend} --scenario {scenario}")
    args = {"metrics_port": str(port), "backend": "flashinfer_cutlass", "scenario": cause,
            "tp": "1", "gpu": "H200",
            "active_params_b": f"{GAP_INPUTS['active_params_b']:g}",
            "bits": f"{GAP_INPUTS['bits']:g}"}
    # this row's processes only (its port), never another simulator on the machine
    return Server("sglang-sim", command, args, sc.flags, sc.fix,
                  f"{SIM} .*--metrics-port {port} ", port)


def standin_server(log: Path, weights_gb: float) -> Server:
    """The real decode stand-in on the GPU (wasted-traffic with --gpu-load):
    slow (the fp32 upcast a token: DRAM traffic a token does not need) until
    ``S`` restarts it with ``phase=fast``; its own log lines, no /metrics."""
    command = (f"{sys.executable} {shlex.quote(str(STANDIN))} {weights_gb:g} 900 "
               f"{shlex.quote(str(log))} {{phase}}")
    return Server("decode-standin", command, {"phase": "slow", "tp": "1", "gpu": "H200"}, (),
                  "phase=fast", f"{STANDIN.name} .*{log}", None, startup_s=180.0)


def config_toml(srv: Server, log: Path, root: Path, preamble: str) -> str:
    """The cockpit's config: the host (its log, its /metrics if any) and the server."""
    metrics = (f'metrics_url = "http://127.0.0.1:{srv.metrics_port}/metrics"\n'
               if srv.metrics_port else "")
    return (f'[[hosts]]\nname = "h200"\nssh = "h200"\npreamble = {json.dumps(preamble)}\n'
            f'python = {json.dumps(sys.executable)}\nlogs = [{json.dumps(str(log))}]\n'
            f'{metrics}\n'
            f'[[servers]]\nname = "{srv.name}"\nhost = "h200"\n'
            f'command = {json.dumps(srv.command)}\n'
            f'log = {json.dumps(str(log))}\nworkdir = {json.dumps(str(root))}\n{metrics}'
            "args = { " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in srv.args.items())
            + " }\n")


def resolved_on(screen: str, cause: str) -> bool:
    """The screen says ``cause`` is resolved: the main screen's line names every
    cause the fix resolved (``✔ launch-bound, wasted-traffic resolved``), the
    Triage view one a line (``✔ launch-bound: resolved —``). The H200 walk of
    2026-12-05 looked for ``launch-bound resolved`` alone and missed the first."""
    flat = " ".join(screen.split())
    names = r"[a-z][a-z-]*(?:, [a-z][a-z-]*)*"
    return any(cause in m.group(1).split(", ")
               for m in re.finditer(rf"✔ ({names}):? resolved", flat))


def walk_one(cause: str, root: Path, gpu_load_gb: float, floor_gbs: float = 0.0) -> dict:
    """One cause: sshd, the server outside the cockpit, the cockpit in tmux."""
    root.mkdir(parents=True, exist_ok=True)
    sshd = SshServer(root / "sshd", alias="h200").start()
    log = root / "server.log"
    log.write_text("")
    if gpu_load_gb and cause == STANDIN_CAUSE:
        srv = standin_server(log, gpu_load_gb)
    else:
        srv = sim_server(cause, sshd.port + 1000, floor_gbs)
    pypath = f"{REPO / 'tui'}:{os.environ.get('H200_SITE', '')}".rstrip(":")
    path = os.environ["PATH"]
    preamble = f"export PYTHONPATH={shlex.quote(pypath)} PATH={shlex.quote(path)}"
    row: dict = {"cause": cause, "gpu_load_gb": gpu_load_gb, "server": srv.name,
                 "command": srv.command.format(**srv.args)}
    server: subprocess.Popen | None = None
    term: Term | None = None
    try:
        # the server, started outside the cockpit with the flags that plant the cause
        argv = shlex.split(srv.command.format(**srv.args)) + list(srv.planted)
        env = {**os.environ, "PYTHONPATH": pypath}
        with open(log, "ab") as fh:
            server = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                      start_new_session=True, cwd=root)
        deadline = time.monotonic() + srv.startup_s
        while decode_lines(log) < 3 and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.3)
        if srv.metrics_port is None:  # the gap form's bytes: the weights the stand-in holds
            m = re.search(r"weights=([0-9.]+) GB", _read(log))
            if m is None:
                raise RuntimeError(f"the stand-in logged no weights in {srv.startup_s:.0f} s: "
                                   f"{_read(log)[-300:]!r}")
            srv.args["weights_gb"] = m.group(1)
            row["weights_gb"] = float(m.group(1))
        cfg = root / "config.toml"
        cfg.write_text(config_toml(srv, log, root, preamble))
        sessions = root / "sessions"
        cmd = (f"env -u LD_LIBRARY_PATH -u COLUMNS -u LINES PYTHONPATH={shlex.quote(pypath)} "
               f"{sys.executable} -m perftriage --config {cfg} --ssh-config {sshd.ssh_config} "
               f"--sessions-dir {sessions}")
        smi = sh("nvidia-smi", "--query-gpu=name,utilization.gpu,memory.used",
                 "--format=csv,noheader") if shutil.which("nvidia-smi") else None
        row["nvidia_smi"] = smi.stdout.strip() if smi is not None else "no nvidia-smi"
        term = Term(f"walk-{cause}", cmd)
        row.update(to_the_cause(term, cause))
        row["keys"] = len(term.keys)
        row["key_list"] = term.keys
        row["seconds_to_cause"] = round(time.monotonic() - term.t0, 1)
        if cause != "healthy" and row["reached"]:
            row.update(fix(term, cause, srv, server, log))
    finally:
        if term is not None:
            term.close()
        if server is not None and server.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGTERM)
        for pid in server_pids(srv.pattern):  # the restarted one (under the sshd's session)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        sshd.stop()
        if term is not None:
            (root / "screens.txt").write_text("\n".join(term.log))
    return row


def fix(term: Term, cause: str, srv: Server, server: subprocess.Popen, log: Path) -> dict:
    """Stop the outside server, S with the fix line's override, ⏎; then no key."""
    out: dict = {"override": srv.fix or "(none: without " + " ".join(srv.planted) + ")"}
    time.sleep(max(0.0, DWELL_S - (time.monotonic() - term.t0)))
    term.press("Escape", count=False)
    term.wait(lambda x: "Findings, ranked" not in x, 10)
    os.killpg(server.pid, signal.SIGTERM)  # its owner stops it (Ctrl-C in its terminal)
    server.wait(timeout=30)
    old = server_pids(srv.pattern)
    decodes_before = decode_lines(log)
    term.press("S", count=False)
    if term.wait(lambda x: "server: start / restart" in x, 20) is None:
        return {**out, "restart_started": False, "resolved": False, "why": "no restart form"}
    if srv.fix:
        term.type(" " + srv.fix)
    term.press("Enter", count=False)
    pressed = time.monotonic()
    started = None
    while time.monotonic() - pressed < START_S:
        if server_pids(srv.pattern) - old:
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
    seen = term.wait(lambda x: resolved_on(x, cause), RESOLVED_S)
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
            f"| {r['cause']}{' (real stand-in)' if r.get('server') == 'decode-standin' else ''}"
            f" | {r.get('keys', '—')} ({' '.join(r.get('key_list', []))}) | "
            f"{r.get('seconds_to_cause', '—') if r.get('reached') else 'not reached'} | "
            f"{r.get('top') or '—'} | {started} | {r.get('seconds_to_resolved', '—')} | "
            f"{r.get('why', '')} |")
    return "\n".join(lines) + "\n"


def start_load(root: Path, gb: float) -> subprocess.Popen:
    """A real decode-shaped load on the GPU beside the simulated server."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "gpu_load.out", "a") as out:
        load = subprocess.Popen([sys.executable, str(STANDIN), f"{gb:g}", "900",
                                 str(root / "gpu_load.log")],
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 120
    seen = _read(root / "gpu_load.log").count("fired up")
    while (time.monotonic() < deadline and load.poll() is None
           and _read(root / "gpu_load.log").count("fired up") == seen):
        time.sleep(0.5)
    print("GPU load:", _read(root / "gpu_load.log")[-300:], flush=True)
    return load


def stop_load(load: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(load.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        load.wait(timeout=60)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("causes", nargs="*", default=list(WALK))
    ap.add_argument("--gpu-load", type=float, default=0.0,
                    help="GB of weights for a real decode load on the GPU beside the server; "
                         f"{STANDIN_CAUSE}'s row runs that stand-in as its server instead")
    ap.add_argument("--floor-gbs", type=float, default=0.0,
                    help="the real GPU's bandwidth per GPU, GB/s: the simulator's step takes "
                         "its floor (default 0: the simulator's own GPUs')")
    ap.add_argument("--root", default="/tmp/h200walk")
    a = ap.parse_args()
    if a.floor_gbs < 0 or a.gpu_load < 0:
        ap.error("--floor-gbs and --gpu-load: 0 or more")
    OUT.mkdir(parents=True, exist_ok=True)
    root = Path(a.root)
    shutil.rmtree(root, ignore_errors=True)
    rows = []
    load = None
    for cause in a.causes:
        # with --gpu-load a real decode load runs for each row, but the stand-in's
        # row, whose server is that load (two would mix in the DRAM counters)
        own = bool(a.gpu_load) and cause == STANDIN_CAUSE
        if own and load is not None:
            stop_load(load)
            load = None
        elif a.gpu_load and not own and load is None:
            load = start_load(root, a.gpu_load)
        t = time.monotonic()
        try:
            row = walk_one(cause, root / cause, a.gpu_load, a.floor_gbs)
        except Exception as exc:  # a cause that breaks is a row saying so
            row = {"cause": cause, "reached": False, "why": f"the walk broke: {exc!r}"}
        row["wall_s"] = round(time.monotonic() - t, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
        (OUT / "walk.json").write_text(json.dumps(rows, indent=1))
        (OUT / "walk.md").write_text(table(rows))
        pack(root, a.causes)  # after each cause: a call cut short still brings back what ran
    if load is not None:
        stop_load(load)
    pack(root, a.causes)
    print(table(rows))


if __name__ == "__main__":
    main()
