"""The third round's rows of the reliability trials (R3.3 to R3.8, run by
``tests/bench/reliability_trials.py``): trace files, checks and packs,
names and a watched transcript, share, a continued investigation's log, an
AWS secret in free text."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

from tests.bench.reliability_support import ENV, REPO, clean_exit_2, cli


def _gzip_member(block: bytes, times: int) -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join([*(comp.compress(block) for _ in range(times)), comp.flush()])


def traced(*args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, int, float]:
    """The CLI in a child, with its peak RSS (VmHWM, MiB) and its seconds."""
    with tempfile.NamedTemporaryFile("r", suffix=".hwm") as hwm:
        code = ("import atexit,re,runpy,sys\n"
                "def hwm():\n"
                f"    open({hwm.name!r},'w').write(re.search(r'VmHWM:\\s+(\\d+)',"
                "open('/proc/self/status').read())[1])\n"
                "atexit.register(hwm)\n"
                f"sys.argv=['perftriage',*{list(args)!r}]\n"
                "runpy.run_module('perftriage',run_name='__main__',alter_sys=True)\n")
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=timeout, env=ENV, stdin=subprocess.DEVNULL)
        took = time.monotonic() - t0
        rss = int(hwm.read() or 0) // 1024
    return r, rss, took


def trace_file_trials() -> tuple[int, int, str]:
    tried = held = 0
    worst_rss, worst_s, notes = 0, 0.0, []

    def kernel(name="nvjet_a", ts=0.0, dur=5.0):
        return {"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "name": name, "ts": ts,
                "dur": dur, "args": {}}

    nsys_head = ("Processing [x.sqlite]\n\nTime (%),Total Time (ns),Instances,Avg (ns),Med (ns),"
                 "Min (ns),Max (ns),StdDev (ns),Name\n")
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        cases: list[tuple[str, Path, str]] = []  # (what, file, a word the error must hold)

        def case(what: str, name: str, word: str) -> Path:
            path = d / name
            cases.append((what, path, word))
            return path

        os.mkfifo(case("FIFO", "fifo-TP-0.trace.json", "not a regular file"))
        case("/dev/zero", "zero-TP-0.trace.json.gz", "not a regular file").symlink_to("/dev/zero")
        case("/dev/urandom", "rand-TP-0.trace.json.gz",
             "not a regular file").symlink_to("/dev/urandom")
        case("directory", "dir-TP-0.trace.json", "directory").mkdir()
        bomb = _gzip_member(b"\0" * (1 << 20), 64)  # one member: 64 MiB of zeros
        with open(case("8 MB gzip to 8 GiB", "bomb-TP-0.trace.json.gz", "limit"), "wb") as fh:
            for _ in range(128):
                fh.write(bomb)
        spaces = _gzip_member(b" " * (1 << 20), 64)
        with open(case("2 MB gzipped whitespace then a trace", "ws-TP-0.trace.json.gz",
                       "limit"), "wb") as fh:
            for _ in range(32):
                fh.write(spaces)
            fh.write(gzip.compress(json.dumps({"traceEvents": [kernel()]}).encode()))
        with open(case("1.5 GiB sparse file", "big-TP-0.trace.json", "limit"), "wb") as fh:
            fh.truncate(3 << 29)
        deep = "[" * 100_000 + "]" * 100_000
        case("args 100k deep", "deep-TP-0.trace.json", "nested").write_text(
            '{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":0,"dur":1,'
            f'"args":{{"grid":{deep}}}}}]}}')
        case("document 100k deep", "deep2-TP-0.trace.json", "nested").write_text(
            f'{{"traceEvents":[],"meta":{deep}}}')
        for i, (ts, dur) in enumerate([(0, -5), (1e308, 1e308), (-1e300, 1)]):
            case(f"kernel ts={ts:g} dur={dur:g}", f"neg{i}-TP-0.trace.json", "event 1").write_text(
                json.dumps({"traceEvents": [kernel(), kernel(ts=ts, dur=dur)]}))
        for i, (total, calls) in enumerate([("1000", "inf"), ("1000", "1e400"),
                                            ("1000", "9" * 5000), ("1000", "-3"),
                                            ("nan", "3"), ("-5", "3"), ("1e400", "3")]):
            case(f"nsys total={total[:6]} calls={calls[:6]}", f"nsys{i}.csv", "line 5").write_text(
                nsys_head + '50.0,2000,4,500,500,400,600,10,"ok"\n'
                + f'50.0,{total},{calls},1,1,1,1,0,"bad"\n')
        case("nsys field over 128 KiB", "nsysfield.csv", "line 4").write_text(
            nsys_head + '50.0,2000,4,500,500,400,600,10,"' + "n" * (200 << 10) + '"\n')
        with open(case("44 MB nsys CSV (1.3M kernels)", "nsysbig.csv", "distinct"), "w") as fh:
            fh.write(nsys_head)
            for i in range(1_300_000):
                fh.write(f"0.0,{i + 1},1,1,1,1,1,0,kernel_{i:09d}\n")
        biggest = slowest = ""
        densest = (1024 << 20) // 96  # reader.BYTES_PER_OBJECT at the default cap
        compact = b'{"ph":"X","cat":"kernel","ts":1,"dur":1}'
        with open(case(f"{densest + 1:,} empty objects", "tiny-TP-0.trace.json", "JSON objects"),
                  "wb") as fh:
            fh.write(b"[" + b",".join([b"{}"] * (densest + 1)) + b"]")
        for what, path, word in cases:
            tried += 1
            r, rss, took = traced("trace", str(path))
            if rss > worst_rss:
                worst_rss, biggest = rss, what
            if took > worst_s:
                worst_s, slowest = took, what
            # click's own usage error (a directory) is exit 2 in its three-line form
            ok = (clean_exit_2(r) or (r.returncode == 2 and "Traceback" not in r.stderr
                                      and "Usage:" in r.stderr)) \
                and str(path) in r.stderr and word in r.stderr
            held += ok
            if not ok:
                print(f"trace trial {what}: rc {r.returncode} {r.stderr[-300:]!r}", file=sys.stderr)
        notes.append(f"{len(cases)} refused with exit 2 naming the file; slowest {worst_s:.1f} s "
                     f"({slowest}), peak RSS {worst_rss} MiB ({biggest}; the cap is 1024 MiB)")
        dense = d / "dense-TP-0.trace.json"  # the densest trace the default cap accepts
        with open(dense, "wb") as fh:
            fh.write(b"[" + b",".join([compact] * densest) + b"]")
        tried += 1
        r, rss, took = traced("trace", str(dense), timeout=600)
        held += r.returncode == 0 and rss < 5 * 1024
        notes.append(f"the densest accepted trace ({densest:,} compact kernel events, "
                     f"{dense.stat().st_size >> 20} MiB): {took:.0f} s, {rss} MiB peak")
        dense.unlink()
        long_names = d / "names-TP-0.trace.json"
        long_names.write_text(json.dumps({"traceEvents": [
            kernel(name=f"ncclKernel_{i:03d}_" + "x" * (1 << 20), ts=10 * i, dur=1)
            for i in range(200)]}))
        tried += 1
        r, rss, took = traced("trace", "--json", str(long_names))
        out = json.loads(r.stdout) if r.returncode == 0 else {"kernels": []}
        held += (len(out["kernels"]) == 200 and took < 30
                 and all(len(k["name"]) < 1100 and k["bucket"] == "communication"
                         for k in out["kernels"]))
        notes.append(f"200 names of 1 MiB: {took:.1f} s, {rss} MiB, names cut to 1 KiB")
        prof = REPO / "tests" / "fixtures" / "profile"
        real = sorted([*prof.glob("eager-*.trace.json.gz"), *prof.glob("graph-*.trace.json.gz")])
        tried += 1
        r, rss, took = traced("trace", "--json", *map(str, real))
        held += r.returncode == 0 and json.loads(r.stdout)["ranks"] == 3
        notes.append("the real H200 traces still read")
    return tried, held, "; ".join(notes)


# --- round 3, item 4: checks and packs -----------------------------------------------------------


def pack_trials() -> tuple[int, int, str]:
    session = str(REPO / "sessions" / "example-moe-gap.jsonl")
    tried = held = 0
    worst_s, longest = 0.0, 0

    def one(body: str) -> str:
        return f'[[hypotheses]]\ntitle = "t"\n{body}\n'

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        packs: list[tuple[str, Path]] = []

        def pack_file(what: str, text: str | None = None) -> Path:
            path = d / f"p{len(packs)}.toml"
            if text is not None:
                path.write_text(text)
            packs.append((what, path))
            return path

        for what, check in [("900 unary minuses", "- " * 900 + "1 > 0"),
                            ("450 nots", "not " * 450 + "true"),
                            ("a 490-term sum", "1" + " + 1" * 490 + " > 0"),
                            ("150 nested abs()", "abs(" * 150 + "1" + ")" * 150 + " > 0"),
                            ("120 nested if/else", "1 if true else " * 120 + "1 > 0"),
                            ("a 3,000-character check", "gap.idle_pct > " + "1" * 3000)]:
            pack_file(what, one(f'check = "{check}"'))
        pack_file("for = 1 and 5,000 zeros", one('check = "gap.idle_pct > 1"\nfor = 1' + "0" * 5000))
        pack_file("for = -(4,400 nines)", one('check = "gap.idle_pct > 1"\nfor = -' + "9" * 4400))
        with open(pack_file("a 50 MB check"), "w") as fh:
            fh.write('[[hypotheses]]\ntitle = "t"\ncheck = "gap.idle_pct > ' + "1" * (50 << 20) + '"\n')
        for n in (2_000, 20_000):
            pack_file(f"{n:,} hypotheses", "".join(
                f'[[hypotheses]]\ntitle = "h{i}"\ncheck = "gap.idle_pct > {i}"\n' for i in range(n)))
        pack_file("100,000 dotted keys in 200 KB", "a" + ".a" * 100_000 + " = 1\n")
        pack_file("a 50,000-part table name", "[" + ".".join(["t"] * 50_000) + "]\nx = 1\n")
        pack_file("40,000 quoted dotted keys inline", one(
            "note = {" + ".".join(['"q"'] * 40_000) + " = 1}"))
        os.mkfifo(pack_file("a FIFO"))
        pack_file("a link to /dev/zero").symlink_to("/dev/zero")
        pack_file("a directory").mkdir()
        for what, path in packs:
            tried += 1
            t0 = time.monotonic()
            r = cli("check", session, "--pack", str(path), timeout=120)
            took = time.monotonic() - t0
            worst_s, longest = max(worst_s, took), max(longest, len(r.stderr))
            ok = clean_exit_2(r) and str(path) in r.stderr and len(r.stderr) < 400
            held += ok
            if not ok:
                print(f"pack trial {what}: rc {r.returncode} {r.stderr[:300]!r}", file=sys.stderr)
        tried += 1
        r = cli("--config", str(d / "c.toml"), "check", session, "--pack", "seed")
        held += r.returncode == 0
    return tried, held, (f"{tried - 1} refused with exit 2, one line of at most {longest} "
                         f"characters naming file and line; slowest {worst_s:.1f} s; "
                         "the bundled pack still evaluates")


# --- round 3, item 8: a secret in free text -------------------------------------------------


def aws_free_text_trials() -> tuple[int, int, str]:
    from perftriage.core.model import events as ev
    from perftriage.core.store.redact import DEFAULT

    corpus = REPO / "tests" / "fixtures" / "secrets"
    tried = held = 0
    for raw in (corpus / "planted.tsv").read_text().splitlines():
        secret, line = raw.split("\t", 1)
        if "AKIA" not in line and "ASIA" not in line:
            continue
        for data in (DEFAULT.text(line).encode(),
                     DEFAULT.json_line(ev.encode(ev.NoteAdded(text=line)))):
            tried += 1
            held += secret.encode() not in data
    clean = [line for line in (corpus / "clean.txt").read_text().splitlines()
             if "commit" in line or "rev-parse" in line]
    unchanged = sum(DEFAULT.text(line) == line for line in clean)
    return tried, held, (f"AKIA/ASIA key id with its 40-character secret, either side, plain and in "
                         f"a transcript line; {unchanged}/{len(clean)} 40-hex commit lines unchanged")


# --- round 3, item 5: names no file can have; a watched transcript cut under the watcher ----


def name_and_watch_trials() -> tuple[int, int, str]:
    from perftriage.core.model import events as ev
    from perftriage.core.store import investigations as inv
    from perftriage.services.investigation.named import open_investigation
    from perftriage.services.investigation.watch import CHECK_INTERVAL_S, Watcher

    names = [b"\xff", b"run-\xff\xfe", b"a" * 10_000, b"x" * 256, ("\u00e9" * 201).encode()]
    commands = [["-s"], ["watch"], ["report"], ["replay"], ["share"]]
    tried = held = 0
    longest = 0
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "c.toml").write_text('[[hosts]]\nname = "localhost"\n')
        for command in commands:
            for name in names:
                tried += 1
                r = subprocess.run(
                    [sys.executable, "-m", "perftriage", "--config", str(d / "c.toml"),
                     "--sessions-dir", str(d / "s"), *command, name],
                    capture_output=True, env=ENV, stdin=subprocess.DEVNULL, timeout=60)
                err = r.stderr.decode("utf-8", "replace")
                longest = max(longest, len(err))
                ok = (r.returncode == 2 and "Traceback" not in err and len(err) < 400
                      and len(err.strip().splitlines()) == 1)
                held += ok
                if not ok:
                    print(f"name trial {command} {name[:20]!r}: rc {r.returncode} {err[-300:]!r}",
                          file=sys.stderr)
        # the watched file: truncated, half a header, garbage, gone, a FIFO, a directory,
        # cut mid-event; then a real transcript again
        s = open_investigation("w", d, [])
        s.emit(ev.NoteAdded(text="before"))
        s.close()
        path = inv.path_for("w", d)
        other = open_investigation("other", d, [])
        other.emit(ev.NoteAdded(text="after"))
        other.close()
        fresh = inv.path_for("other", d).read_bytes()
        clock = [0.0]
        w = Watcher(path, clock=lambda: clock[0])
        w.go_live()

        def cut(how: str) -> None:
            if path.is_dir():
                path.rmdir()
            elif path.exists() or path.is_symlink():
                path.unlink()
            if how == "empty":
                path.write_bytes(b"")
            elif how == "half header":
                path.write_bytes(fresh[:40])
            elif how == "garbage":
                path.write_bytes(b"\x00\xff not a transcript\n")
            elif how == "fifo":
                os.mkfifo(path)
            elif how == "directory":
                path.mkdir()
            elif how == "mid-event":
                path.write_bytes(fresh[:fresh.index(b"\n") + 20])

        for how in ["empty", "half header", "garbage", "gone", "fifo", "directory", "mid-event"]:
            tried += 1
            cut(how)
            try:
                for _ in range(3):
                    clock[0] += CHECK_INTERVAL_S
                    w.tick()
                held += [n.text for n in w.session.state.notes] in (["before"], [])
            except Exception as exc:  # a trial counts what crashes
                print(f"watch trial {how}: {exc!r}", file=sys.stderr)
        tried += 1
        cut("gone")
        path.write_bytes(fresh)
        clock[0] += CHECK_INTERVAL_S
        w.tick()
        held += [n.text for n in w.session.state.notes] == ["after"] and w.waiting is None
    return tried, held, (f"25 names x commands exit 2, one line of at most {longest} characters; "
                         "7 cut transcripts keep the last state and say why, then the new one shows")


# --- round 3, item 6: share's visitors --------------------------------------------------------


def _group_rss(pgids: set[int]) -> tuple[int, int]:
    """(live processes in these process groups, their RSS in KiB), from /proc."""
    count = rss = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[2]) in pgids:
            count += 1
            rss += next((int(ln.split()[1]) for ln in status.splitlines()
                         if ln.startswith("VmRSS:")), 0)
    return count, rss


def share_trials() -> tuple[int, int, str]:
    return asyncio.run(_share_trials())


async def _share_trials() -> tuple[int, int, str]:
    import aiohttp

    from perftriage.core.model import events as ev
    from perftriage.services.investigation.named import open_investigation
    from perftriage.services.investigation.share import COOKIE, ShareServer, bind, watch_command

    tried = held = 0
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        s = open_investigation("shared", d, [])
        s.emit(ev.NoteAdded(text="visible"))
        s.close()
        server = ShareServer(watch_command("shared", d), bind(None), title="t", max_visitors=4)
        runner = await server.start()
        base = f"http://127.0.0.1:{server.share.port}"
        cookie = {"Cookie": f"{COOKIE}={server.token}"}
        headers = {**cookie, "Origin": base}
        peak_procs = peak_rss = 0
        ends: list[float] = []
        try:
            async with aiohttp.ClientSession() as http:
                sockets = []
                for _ in range(20):  # 20 visitors with the cookie at once
                    tried += 1
                    try:
                        sockets.append(await http.ws_connect(base + "/ws", headers=headers))
                        held += len(sockets) <= 4
                    except aiohttp.WSServerHandshakeError as exc:
                        held += exc.status == 503 and len(sockets) == 4
                await asyncio.sleep(8)  # the watchers start (and would keep running)
                groups = {app.pid for app in server.visitors if app.pid}
                peak_procs, peak_rss = _group_rss(groups)
                page = await http.get(base + "/", headers=headers)
                tried += 1
                held += page.status == 503 and "at most 4 at once" in await page.text()
                t0 = time.monotonic()
                await asyncio.gather(*(ws.close() for ws in sockets))
                left = set(groups)
                while left and time.monotonic() - t0 < 10:
                    for g in list(left):
                        if _group_rss({g})[0] == 0:
                            left.discard(g)
                            ends.append(time.monotonic() - t0)
                    await asyncio.sleep(0.02)
                for g in groups:
                    tried += 1
                    held += g not in left and max(ends, default=99) < 2.0
                for host in ["evil.example", f"evil.example:{server.share.port}", "",
                             f"10.0.0.1:{server.share.port}", f"127.0.0.1.nip.io:{server.share.port}"]:
                    tried += 1
                    r = await http.get(base + "/", headers={**cookie, "Host": host})
                    held += r.status == 403
                for origin in ["http://evil.example", f"http://localhost:{server.share.port + 1}",
                               "null", None]:
                    tried += 1
                    try:
                        ws = await http.ws_connect(base + "/ws", headers={
                            **cookie, **({"Origin": origin} if origin else {})})
                        await ws.close()
                    except aiohttp.WSServerHandshakeError as exc:
                        held += exc.status == 403
        finally:
            await runner.cleanup()
    return tried, held, (f"20 visitors: 4 served, 16 refused (503, the page says the cap); "
                         f"{peak_procs} processes, {peak_rss / 1024:.0f} MiB at the peak; all "
                         f"gone {max(ends, default=0):.2f} s after their websockets closed; "
                         "5 Host and 4 Origin values refused with the cookie")


# --- round 3, item 7: a continued investigation's followed log ----------------------------------


def log_resume_trials() -> tuple[int, int, str]:
    from tests.support.sshd import SshServer, sshd_available

    with tempfile.TemporaryDirectory() as tmp:
        if not sshd_available():
            return asyncio.run(_log_resume_trials(Path(tmp), None))
        with SshServer(Path(tmp) / "sshd") as sshd:
            return asyncio.run(_log_resume_trials(Path(tmp), sshd))


async def _log_resume_trials(d: Path, sshd) -> tuple[int, int, str]:
    from perftriage.core.model import events as ev
    from perftriage.core.report.from_file import render_file
    from perftriage.core.store import config as config_mod
    from perftriage.core.store import transcript
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.hosts.registry import HostRegistry
    from perftriage.services.investigation.named import open_investigation
    from tests.support.helpers import wait_for
    from tests.support.probe_support import local_host, ssh_host

    from tests.reliability.test_log_resume import LINES as lines
    from tests.reliability.test_log_resume import MORE as more
    from tests.reliability.test_log_resume import _write as write

    async def run(name: str, kind: str, log: Path, want: int, between=None) -> Cockpit:
        host = (local_host(logs=[str(log)]) if kind == "local"
                else ssh_host(sshd, logs=[str(log)]))
        reg = HostRegistry()
        reg.add(host)
        session = open_investigation(name, d / "sessions", reg.names, defer_logs=True)
        cockpit = Cockpit(config_mod.Config(), registry=reg, session=session, sample_interval=1.0)
        await cockpit.start()
        try:
            if between is not None:
                await asyncio.sleep(1.5)
                between()
            await wait_for(lambda: any(s.path == str(log) and s.file_line == want
                                       for s in cockpit.session.state.logs.values()), timeout=60)
        finally:
            await cockpit.stop()
        return cockpit

    def written_on(log: Path) -> tuple[list[str], int]:
        write(log, more, "a")
        return more, len(lines) + len(more)

    def rotate(log: Path) -> tuple[list[str], int]:
        os.rename(log, log.with_name(log.name + ".1"))
        write(log, more * 10)  # longer than what was read: only the inode tells
        return more * 10, len(more) * 10

    def truncate(log: Path) -> tuple[list[str], int]:
        write(log, more)  # the same inode, fewer bytes
        return more, len(more)

    def gone(log: Path) -> tuple[list[str], int]:
        log.unlink()  # a new file appears only once the next run follows
        return more, len(more)

    # (what, the change between the runs, what the note says (None: no note))
    scenarios = [("written on", written_on, None), ("rotated (longer)", rotate, "rotated"),
                 ("truncated in place", truncate, "truncated"), ("gone, then a new file", gone,
                                                                 "gone")]
    tried = held = 0
    kinds = ["local"] + (["ssh"] if sshd is not None else [])
    for kind in kinds:
        for i, (what, change, said) in enumerate(scenarios):
            tried += 1
            name = f"{kind}-{i}"
            log = d / f"{name}.log"
            write(log, lines)
            await run(name, kind, log, len(lines))
            added, target = change(log)
            between = (lambda log=log: write(log, more)) if change is gone else None
            second = await run(name, kind, log, target, between)
            events = transcript.read(second.session.path).events
            recorded = [ln for e in events if isinstance(e, ev.LogLines) for ln in e.lines]
            notes = [e.text for e in events if isinstance(e, ev.NoteAdded)]
            ok = recorded == lines + added and (
                not notes if said is None else len(notes) == 1 and said in notes[0])
            held += ok
            if not ok:
                print(f"log trial {kind} {what}: {len(recorded)} lines, notes {notes}",
                      file=sys.stderr)
    # a transcript recorded before the fix: the same file read again from line 1
    tried += 1
    s = open_investigation("old", d, ["gpu1"])
    s.emit(ev.LogSourceOpened(source_id="log-1", host="gpu1", path="/var/log/x.log"))
    s.emit(ev.LogLines(source_id="log-1", lines=lines))
    s.close()
    s = open_investigation("old", d, ["gpu1"])
    s.emit(ev.LogSourceOpened(source_id="log-2", host="gpu1", path="/var/log/x.log"))
    s.emit(ev.LogLines(source_id="log-2", lines=lines + more))
    s.close()
    report = render_file(s.path)
    decode = sum("Decode batch" in ln for ln in lines + more)
    held += report.count(" decode lines;") == 1 and f": {decode} decode lines;" in report
    return tried, held, (f"{len(kinds)} transports x {len(scenarios)} changes between runs: every "
                         "line recorded once, the change said; a pre-fix transcript's report "
                         "counts each line once")


ROUND3 = [
    ("R3.3 trace files: FIFO, devices, bombs, deep JSON, bad times and nsys numbers, long names",
     trace_file_trials),
    ("R3.4 checks and packs: deep and long checks, TOML digits, big packs, dotted keys",
     pack_trials),
    ("R3.5 names no file can have; a watched transcript cut under the watcher",
     name_and_watch_trials),
    ("R3.6 share: 20 visitors, their processes, Host and Origin", share_trials),
    ("R3.7 a continued investigation's followed log: written on, rotated, truncated, gone",
     log_resume_trials),
    ("R3.8 an AWS secret in free text beside its key id", aws_free_text_trials),
]
