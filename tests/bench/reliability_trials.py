"""The table of trials in docs/reliability.md, measured: each row runs its
hostile inputs against the real code (real HTTP servers on 127.0.0.1, real
files, the real CLI in a subprocess) and counts what held.

Run: ``PYTHONPATH=tui:. python3 -m tests.bench.reliability_trials`` (about
two minutes). A row that does not hold fully is printed as such: it is a
measurement, not a test (the tests are ``tests/test_*.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.reliability_capture import TRIALS as CAPTURE_TRIALS
from tests.bench.reliability_round3 import ROUND3
from tests.bench.reliability_support import ENV, REPO, clean_exit_2, cli
from tests.bench.table import print_table


# --- 1. HTTP reads -------------------------------------------------------------------
def http_trials() -> tuple[int, int, str]:
    from perftriage.core.http_limits import HttpLimits
    from perftriage.transport.prometheus import PrometheusClient, PrometheusError
    from perftriage.transport.base import TransportError
    from perftriage.transport.http_get import HttpGetter
    from perftriage.transport.local import LocalTransport
    from tests.support.hostile_http import HostileHttp

    limits = HttpLimits(1 << 20, 2.0)
    server = HostileHttp()
    held = tried = 0
    worst = 0.0
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    async def one(path: str, client: str) -> bool:
        t0 = time.monotonic()
        try:
            if client == "prometheus":
                async with PrometheusClient(server.url(path), limits=limits) as c:
                    await c.query("up")
            else:
                g = HttpGetter(LocalTransport(), server.url(path), limits=limits)
                try:
                    await g.get()
                finally:
                    await g.close()
        except (PrometheusError, TransportError) as exc:
            nonlocal worst
            took = time.monotonic() - t0
            worst = max(worst, took)
            reason = getattr(exc, "reason", str(exc))
            return took < limits.deadline_s + 1.5 and "limit" in reason and path in reason
        return False

    try:
        for path in ("/endless", "/drip", "/silent", "/big/52428800") * 3:
            for client in ("prometheus", "engine-metrics"):
                tried += 1
                held += asyncio.run(one(path, client))
    finally:
        server.stop()
    grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    return tried, held, f"slowest {worst:.1f} s (deadline 2 s); peak RSS grew {grew:.0f} MiB"


# --- 2. config values ------------------------------------------------------------------

BAD_VALUES = ["nan", "inf", "-inf", "-1", "0", "99999999999999999999999", "1e308", '"abc"',
              "true", "[]", "{}", '"{"', '"http://h:99999"', '"not a url"', '"root@h:-1"']
FIELDS = [("ui", "sample_interval"), ("ui", "log_ring_lines"), ("ui", "transcript_log_cap"),
          ("fleet", "interval"), ("fleet", "threshold"), ("fleet", "prometheus"), ("fleet", "ssh"),
          ("hosts", "connect_timeout"), ("hosts", "keepalive_interval"),
          ("hosts", "max_channels"), ("hosts", "ssh"), ("hosts", "metrics_url"),
          ("servers", "command"), ("servers", "health_url"), ("probes", "timeout")]


def config_text(section: str, key: str, value: str) -> str:
    if section == "hosts":
        return f'[[hosts]]\nname = "a"\n{key} = {value}\n'
    if section == "servers":
        return f'[[servers]]\nname = "s"\ncommand = "x"\n{key} = {value}\n'.replace(
            'command = "x"\ncommand', "command")
    if section == "probes":
        return f'[[probes]]\nname = "t"\nkind = "import"\nargs = ["x"]\n{key} = {value}\n'
    return f"[{section}]\n{key} = {value}\n"


def config_trials() -> tuple[int, int, str]:
    from perftriage.core.store.config import ConfigError, parse

    tried = held = rejected = 0
    for section, key in FIELDS:
        for value in BAD_VALUES:
            text = config_text(section, key, value)
            tried += 1
            try:
                parse(text, "c.toml")
                held += 1  # accepted: a value that is in range (e.g. 0 for a cap)
            except ConfigError as exc:
                rejected += 1
                held += exc.line is not None
            except Exception:  # noqa: BLE001 - a crash is what this counts
                pass
    deep = "a = " + "[" * 100_000 + "]" * 100_000
    tried += 1
    try:
        parse(deep, "c.toml")
    except ConfigError:
        held += 1
    return tried, held, f"{rejected} rejected with file:line, the rest valid values; " \
                        "plus 100 000-deep nesting"


# --- 3. secrets ---------------------------------------------------------------------------


def secret_trials() -> tuple[int, int, str]:
    from perftriage.core.model import events as ev
    from perftriage.core.store.redact import DEFAULT

    corpus = REPO / "tests" / "fixtures" / "secrets"
    tried = held = 0
    for raw in (corpus / "planted.tsv").read_text().splitlines():
        secret, line = raw.split("\t", 1)
        line = line.replace("\\n", "\n")
        for data in (DEFAULT.text(line).encode(),
                     DEFAULT.json_line(ev.encode(ev.NoteAdded(text=line)))):
            tried += 1
            held += secret.encode() not in data
    clean = (corpus / "clean.txt").read_text().splitlines()
    logs = Path("/work/shared/fixtures/logs")
    for name in ("sglang-0.5.23-tp8.log", "vllm-0.33.0.log"):
        if (logs / name).exists():
            clean += (logs / name).read_text().splitlines()
    unchanged = sum(DEFAULT.text(line) == line for line in clean)
    return tried, held, f"plain text and transcript line each; {unchanged}/{len(clean)} " \
                        "look-alike and real engine log lines unchanged"


# --- 4. unwritable sessions dir ----------------------------------------------------------------


def sessions_dir_trials() -> tuple[int, int, str]:
    import signal

    tried = held = 0
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "c.toml").write_text("")
        (base / "file").write_text("x")

        def no_room() -> None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

        cases = [("below a file", base / "file" / "s", None),
                 ("/proc", Path("/proc/perftriage-x"), None),
                 ("over RLIMIT_FSIZE", base / "full", no_room)]
        ro = base / "ro"
        ro.mkdir()
        immutable = subprocess.run(["chattr", "+i", str(ro)], capture_output=True).returncode == 0
        if immutable:
            cases.append(("read-only (chattr +i)", ro, None))
        try:
            for _, directory, preexec in cases:
                tried += 1
                r = cli("--config", str(base / "c.toml"), "--sessions-dir", str(directory),
                        preexec=preexec)
                empty = directory.is_dir() and any(directory.iterdir())
                held += clean_exit_2(r) and "--sessions-dir" in r.stderr and not empty
        finally:
            if immutable:
                subprocess.run(["chattr", "-i", str(ro)], check=False)
    return tried, held, "exit 2, one line naming the directory and --sessions-dir, no file left"


# --- 5. bad summaries --------------------------------------------------------------------------

HEADER = '{"format":"perftriage-session","version":1,"started_at":"2026-11-28T09:00:00","hosts":["a"]}\n'


def summary_trials() -> tuple[int, int, str]:
    values = ['"abc"', "null", "1e400", "NaN", "-1", "true", "[]", "{}", '"1"', "1e308"]
    tried = held = 0
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "2026-01-01-good.jsonl").write_text(
            HEADER + '{"type":"session.summary","events":0,"duration_s":1.0,"ended":true}\n')
        for i, (key, value) in enumerate((k, v) for k in ("events", "duration_s", "ended", "counts")
                                          for v in values):
            body = {"events": "0", "duration_s": "1.0", "ended": "true", "counts": "{}"}
            body[key] = value
            (d / f"2026-02-{i:02d}-bad.jsonl").write_text(
                HEADER + '{"type":"session.summary",' + ",".join(f'"{k}":{v}' for k, v in body.items())
                + "}\n")
            tried += 1
        r = cli("--sessions-dir", str(d), "sessions", "--json")
        rows = json.loads(r.stdout) if r.returncode == 0 else []
        good = [row for row in rows if "good" in row["name"]]
        for row in rows:
            if "bad" in row["name"]:
                # held: a file whose summary is believable is listed, the others unreadable
                held += row["error"] is None or "session.summary" in row["error"]
        ok = bool(good) and good[0]["error"] is None
    return tried, held if ok else 0, f"one listing of {tried + 1} files; the good file listed"


# --- 6. half records ---------------------------------------------------------------------------


def half_record_trials(n: int = 1500) -> tuple[int, int, str]:
    from perftriage.core.report.from_file import render_file
    from perftriage.core.report import markdown
    from perftriage.services.investigation.replay import Replayer
    from tests.support.event_samples import samples, write_transcript
    from tests.ui.test_half_records import OTHER_VALUES, mutated, paths

    found = samples()
    rng = random.Random(23)
    tried = held = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            tag = rng.choice(sorted(found))
            where = rng.choice(paths(found[tag]))
            action = rng.choice(["drop", *OTHER_VALUES])
            events = [found[t] if t != tag else mutated(found[t], where, action) for t in found]
            path = write_transcript(Path(tmp) / f"{i}.jsonl", events)
            tried += 1
            try:
                render_file(path)
                r = Replayer(path, clock=lambda: 0.0)
                r.timeline.scan()
                r.player.seek(len(r.timeline))
                markdown.render(r.session.state)
                held += 1
            except Exception as exc:  # noqa: BLE001 - a crash is what this counts
                print(f"half record {tag} {where} {action!r}: {exc!r}", file=sys.stderr)
            path.unlink()
    return tried, held, f"{len(found)} event types; one field dropped or retyped each time; " \
                        "report + replay + M"


# --- 7. bounded file reads ---------------------------------------------------------------------


def file_trials() -> tuple[int, int, str]:
    tried = held = 0
    notes = []
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "2026-01-01-good.jsonl").write_text(HEADER)
        os.mkfifo(d / "2026-01-02-fifo.jsonl")
        (d / "2026-01-03-zero.jsonl").symlink_to("/dev/zero")
        (d / "2026-01-04-dir.jsonl").mkdir()
        with open(d / "2026-01-05-longheader.jsonl", "wb") as fh:
            fh.write(b'{"format":"perftriage-session",' + b"x" * (200 << 20))
        t0 = time.monotonic()
        r = cli("--sessions-dir", str(d), "sessions", "--json", timeout=60)
        took = time.monotonic() - t0
        rows = {row["name"]: row for row in json.loads(r.stdout)} if r.returncode == 0 else {}
        for name in ("fifo", "zero", "dir", "longheader"):
            tried += 1
            row = next((v for k, v in rows.items() if name in k), None)
            held += row is not None and bool(row["error"])
        notes.append(f"listing with a FIFO, /dev/zero, a directory, a 200 MB header: {took:.1f} s")
        big = d / "big.jsonl"
        with open(big, "wb") as fh:
            fh.write(HEADER.encode())
            fh.write(b'{"type":"note","text":"before","t":1.0}\n')
            fh.write(b'{"type":"log.lines","source_id":"l","lines":["')
            for _ in range(300):
                fh.write(b"y" * (1 << 20))
            fh.write(b'"],"t":2}\n')
            fh.write(b'{"type":"note","text":"after","t":3.0}\n')
        # VmHWM, not ru_maxrss: the latter counts the forking parent's pages too
        probe = ("import re,sys;from perftriage.core.report.from_file import render_file;"
                 "p=[];t=render_file(sys.argv[1],p);"
                 "hwm=int(re.search(r'VmHWM:\\s+(\\d+)',open('/proc/self/status').read())[1]);"
                 "print(hwm//1024, len(p), 'after' in t)")
        out = subprocess.run([sys.executable, "-c", probe, str(big)], capture_output=True,
                             text=True, env=ENV, timeout=120).stdout.split()
        tried += 1
        held += bool(out) and out[1] == "1" and out[2] == "True" and int(out[0]) < 400
        notes.append(f"report of a 300 MB event: {out[0] if out else '?'} MiB peak RSS")
    return tried, held, "; ".join(notes)


# --- 8. written bytes and modes ---------------------------------------------------------------


def written_trials() -> tuple[int, int, str]:
    from perftriage.core.model import events as ev
    from perftriage.services.investigation.session import Session

    chars = [chr(c) for c in [0x7F, *range(0x80, 0xA0), 0x61C, 0x200E, 0x200F, 0x2028, 0x2029,
                              *range(0x202A, 0x202F), *range(0x2066, 0x206A)]]
    chars += [chr(c) for c in range(0x00, 0x20) if c != 0x0A]
    tried = held = 0
    old = os.umask(0)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp) / "p1" / "p2" / "sessions"
            s = Session("x", sessions_dir=base)
            for ch in chars:
                s.emit(ev.NoteAdded(text=f"a{ch}b"))
            s.close()
            data = s.path.read_bytes()
            for ch in chars:
                tried += 1
                held += ch.encode() not in data.replace(b"\n", b"")
            for dd in (Path(tmp) / "p1", Path(tmp) / "p1" / "p2", base):
                tried += 1
                held += (dd.stat().st_mode & 0o777) == 0o700
    finally:
        os.umask(old)
    return tried, held, f"{len(chars)} C0/DEL/C1/bidi characters absent raw from a transcript; " \
                        "3 directories made under umask 000 are 0700"


# --- 9. shell templates ----------------------------------------------------------------------

PAYLOADS = ["x; touch {m}", "x && touch {m}", "x || touch {m}", "$(touch {m})", "`touch {m}`",
            "x | touch {m}", "x\ntouch {m}", "x > {m}", "x & touch {m}", "'; touch {m}; '",
            '"; touch {m}; "', "${{IFS}}touch${{IFS}}{m}", "x;touch {m}#", "\\; touch {m}",
            "$(printf touch) {m}", "x\rtouch {m}", "*; touch {m}", "~; touch {m}",
            "{{args_raw}}; touch {m}", "-e; touch {m}"]


def template_trials() -> tuple[int, int, str]:
    tried = held = 0
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "c.toml").write_text('[[probes]]\nname = "tshell"\nkind = "shell"\nargs = ["echo"]\n')
        for i, payload in enumerate(PAYLOADS):
            marker = f"PWNED{i}"
            tried += 1
            r = cli("--config", str(d / "c.toml"), "--sessions-dir", str(d / "s"), "probe",
                    "tshell", "--", payload.format(m=marker), cwd=d)
            held += r.returncode == 0 and not (d / marker).exists()
    return tried, held, "through `perftriage probe TEMPLATE` on localhost"


# --- round 3, item 3: trace files through one bounded reader ----------------------------------


TRIALS = [
    ("1. HTTP reads: endless, 1 byte/s, silent, 50 MB; Prometheus and engine /metrics", http_trials),
    ("2. config: 15 numeric/URL/template/ssh fields x 15 bad values", config_trials),
    ("3. secrets: planted corpus (tests/fixtures/secrets)", secret_trials),
    ("4. sessions dir unwritable at start", sessions_dir_trials),
    ("5. session.summary with bad values, in one listing", summary_trials),
    ("6. half records (any field of any event dropped or retyped)", half_record_trials),
    ("7. files: FIFO, /dev/zero, directory, long header, 300 MB event", file_trials),
    ("8. raw characters and modes", written_trials),
    ("9. shell-template injection payloads", template_trials),
    *ROUND3,
    *CAPTURE_TRIALS,  # R3.1, R3.2, 35.6: the profile capture against a hostile server
]


def main() -> None:
    # arguments: run only the rows whose label starts with one of them ("R3.3")
    wanted = sys.argv[1:]
    rows = []
    for label, trial in TRIALS:
        if wanted and not any(label.startswith(w) for w in wanted):
            continue
        t0 = time.monotonic()
        tried, held, note = trial()
        rows.append((label, f"{held}/{tried}", f"{note} ({time.monotonic() - t0:.0f} s)"))
        print(rows[-1], file=sys.stderr, flush=True)
    print_table("Reliability trials, second round", "held / tried", rows)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
