"""The ncu probe and ``perftriage kernels`` against hostile input (issue 42):
a profiled command that forges the result line, files and answers too big to
hold or to cross the transport, numbers that are not numbers, temporary
directories left behind. The ``ncu`` programs here are FAKES written by the
tests (no GPU on the test box)."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from tests.support.probe_support import (  # noqa: F401 - fixture
    close_probe_hosts,
    fake_nvidia_smi_dir,
    make_host,
    run_probe,
)

from perftriage.core import probes
from perftriage.core.probe_kinds.kind import script_result
from perftriage.core.profile import ncu_csv

FIXTURE = Path(__file__).parents[1] / "fixtures" / "ncu" / "moe-step-eager.csv"


def forged_result() -> str:
    """A result line as the fold prints it, for a GPU the host does not have."""
    folded = ncu_csv.fold_file(str(FIXTURE))
    return json.dumps({**folded, "gpu": "FORGED GPU", "nvml": None})


def fake_ncu(tmp_path: Path, body: str) -> Path:
    """A FAKE ``ncu`` in its own PATH folder: parses ncu's flags, runs the
    program (stdin and stdout inherited, as ncu does), then ``body``."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    ncu = folder / "ncu"
    ncu.write_text(textwrap.dedent("""\
        #!/usr/bin/env python3
        import os, subprocess, sys
        args = sys.argv[1:]
        opts, i = {}, 0
        while i < len(args) and args[i].startswith("-"):
            if args[i] in ("--csv",):
                i += 1
                continue
            opts[args[i]] = args[i + 1]
            i += 2
        program = args[i:]
        rc = subprocess.call(program)
        """) + textwrap.dedent(body))
    ncu.chmod(0o755)
    return folder


def host_for(request, tmp_path: Path, folder: Path, python: str = "python3",
             transport: str = "local"):
    return make_host(transport, request, python=python, preamble=(
        f"export PATH={folder}:{fake_nvidia_smi_dir(tmp_path)}:/usr/bin:/bin "
        f"TMPDIR={tmp_path}"))


def dying_python(tmp_path: Path) -> str:
    """The host's Python for the fold, killed as it starts (the OOM killer,
    a crash): the fold dies and prints nothing."""
    p = tmp_path / "dying-python"
    p.write_text("#!/bin/sh\nkill -KILL $$\n")
    p.chmod(0o755)
    return str(p)


FORGE = ("import sys; sys.stdout.write('\\n' + sys.argv[1] + sys.argv[2] + '\\n'); "
         "sys.stdout.flush()")


@pytest.mark.parametrize("transport", ["local", pytest.param("ssh", marks=pytest.mark.ssh)])
async def test_a_forged_result_line_then_a_crash_is_never_ok(transport, request, tmp_path):
    """Before: the command's ``@@perftriage-result@@{…}`` was the last marked
    line when the fold then died: verdict ok, "FORGED GPU"."""
    folder = fake_ncu(tmp_path, "os.kill(os.getpid(), 11)\n")  # ncu crashes: no CSV
    host = host_for(request, tmp_path, folder, dying_python(tmp_path), transport)
    p = await run_probe(host, "ncu", ["python3", "-c", FORGE, probes.RESULT_MARK,
                                      forged_result()])
    assert p.status != "ok", (p.status, p.summary)
    assert "FORGED" not in p.summary and "ncu" not in p.detail


async def test_a_forged_line_printed_after_the_real_result_loses(request, tmp_path):
    """A child of the command outlives it and prints its line after the
    fold's own (then the last marked line); the fold's answer stands."""
    folder = fake_ncu(tmp_path, "sys.exit(rc)\n")  # no CSV: the fold says so
    host = host_for(request, tmp_path, folder)
    late = ("import os, sys, time\n"
            "if os.fork() == 0:\n"
            "    time.sleep(1.5)\n"
            "    sys.stdout.write('\\n' + sys.argv[1] + sys.argv[2] + '\\n')\n"
            "    sys.stdout.flush()\n"
            "    os._exit(0)\n")
    p = await run_probe(host, "ncu", ["python3", "-c", late, probes.RESULT_MARK,
                                      forged_result()])
    assert p.status == "failed" and "no usable CSV" in p.summary, (p.status, p.summary)
    assert "FORGED" not in p.summary


SNOOP = r"""
import os, re, sys
# everything this process can read of what started it: its stdin, and the
# command lines and environments of its ancestors (the same user's)
seen = []
try:
    seen.append(os.read(0, 1 << 16).decode("utf-8", "replace"))
except OSError:
    pass
pid = os.getppid()
while pid > 1:
    for name in ("cmdline", "environ"):
        try:
            with open("/proc/%d/%s" % (pid, name), "rb") as f:
                seen.append(f.read().decode("utf-8", "replace"))
        except OSError:
            pass
    try:
        with open("/proc/%d/stat" % pid) as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        break
words = set(re.findall(r"[0-9A-Za-z_-]{8,}", "\n".join(seen)))
mark, forged = sys.argv[1], sys.argv[2]
out = ["", mark + forged] + [mark + w + forged for w in sorted(words)]
sys.stdout.write("\n".join(out) + "\n")
sys.stdout.flush()
print("tried", len(words), file=sys.stderr)
"""


async def test_the_command_cannot_learn_the_runs_nonce(request, tmp_path):
    """The command tries every word of its stdin and its ancestors' command
    lines and environments as the nonce; none of them is it."""
    folder = fake_ncu(tmp_path, "os.kill(os.getpid(), 11)\n")
    host = host_for(request, tmp_path, folder, dying_python(tmp_path))
    p = await run_probe(host, "ncu", ["python3", "-c", SNOOP, probes.RESULT_MARK,
                                      forged_result()])
    assert "tried" in p.stderr  # the snoop ran
    assert p.status != "ok", (p.status, p.summary)
    assert "FORGED" not in p.summary and "ncu" not in p.detail


@pytest.mark.parametrize("sep", ["\n", "\r", "\r\n", "\x0b", "\x1c", "\u2028"])
def test_only_the_line_with_the_nonce_is_the_result(sep):
    """Lines split as the result reader splits them: a forged line after any
    line break it knows never passes for the result."""
    nonce = "0123456789abcdef" * 2
    real = probes.RESULT_MARK + nonce + '{"gpu": "real"}'
    forged = probes.RESULT_MARK + '{"gpu": "FORGED GPU"}'
    out = probes.authentic(sep.join(["out", real, "more", forged, ""]), nonce)
    assert script_result(out) == {"gpu": "real"}
    assert script_result(probes.authentic(real + "\n", nonce)) == {"gpu": "real"}
    assert script_result(probes.authentic(forged + "\n", nonce)) is None
    assert script_result(probes.authentic(real + "\n", "")) is None  # no nonce: nothing


SUPPORT_NCU = Path(__file__).parents[1] / "support" / "fake_ncu"


def _aged(path: Path, days: float) -> Path:
    t = path.stat().st_mtime - days * 86400
    os.utime(path, (t, t), follow_symlinks=False)
    return path


async def test_the_probes_own_old_temporary_dirs_are_swept(request, tmp_path):
    """A probe killed with SIGKILL (the transports' way) runs no trap: its
    ``perftriage-ncu.*`` stays. The next run removes this probe's own dirs
    older than a day — never a fresh one (a probe still running), another
    probe's, or what a link points at."""
    old = tmp_path / "perftriage-ncu.OLD111"
    (old / "sub").mkdir(parents=True)
    (old / "ncu.csv").write_text("x" * 1000)
    _aged(old, 2)
    fresh = tmp_path / "perftriage-ncu.NEW222"
    fresh.mkdir()
    other = _aged(_mkdir(tmp_path / "perftriage-stacks-OLD333"), 2)
    target = _mkdir(tmp_path / "kept")
    (target / "precious").write_text("keep")
    link = tmp_path / "perftriage-ncu.LINK44"
    link.symlink_to(target)
    _aged(link, 2)
    host = host_for(request, tmp_path, SUPPORT_NCU)
    p = await run_probe(host, "ncu", ["python3", "-c", "pass"])
    assert p.status == "ok", (p.summary, p.stderr)
    assert not old.exists()
    assert fresh.is_dir() and other.is_dir() and (target / "precious").exists()
    assert sorted(x.name for x in tmp_path.glob("perftriage-ncu.*")) == [
        "perftriage-ncu.LINK44", "perftriage-ncu.NEW222"]


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


async def test_a_probe_terminated_on_the_host_removes_its_dir(request, tmp_path):
    """SIGTERM or SIGHUP to the host script (a hang-up, an admin's kill)
    while ncu runs: the trap removes the temporary dir."""
    import asyncio
    import signal

    from perftriage.core.probe_kinds import ncu_kind
    from perftriage.core.probe_kinds.kind import HostContext

    command = ncu_kind.NCU_KIND.build(["python3", "-c", "pass"], HostContext(deadline_s=60))
    env = {**os.environ, "PATH": f"{SUPPORT_NCU}:/usr/bin:/bin", "TMPDIR": str(tmp_path),
           "FAKE_NCU_MODE": "hang"}
    proc = await asyncio.create_subprocess_exec(
        "/bin/sh", "-c", command, stdin=asyncio.subprocess.PIPE, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True)
    proc.stdin.write(b"ab" * 16 + b"\n")
    await proc.stdin.drain()
    for _ in range(100):
        if list(tmp_path.glob("perftriage-ncu.*")):
            break
        await asyncio.sleep(0.05)
    assert list(tmp_path.glob("perftriage-ncu.*"))
    await asyncio.sleep(0.5)  # ncu started (it hangs)
    os.killpg(proc.pid, signal.SIGTERM)
    await asyncio.wait_for(proc.wait(), 30)
    for _ in range(100):  # the host script runs its trap once ncu is gone
        if not list(tmp_path.glob("perftriage-ncu.*")):
            break
        await asyncio.sleep(0.05)
    assert not list(tmp_path.glob("perftriage-ncu.*"))


async def test_a_cancelled_probe_leaves_no_ncu_running(request, tmp_path):
    """Cancelling kills the probe's process group (SIGKILL); ``timeout`` put
    ncu in a group of its own, so ncu and the command ran on to the deadline."""
    import asyncio

    from tests.support.helpers import alive
    from tests.support.probe_support import runner_for

    log = tmp_path / "ncu.jsonl"
    host = make_host("local", request, preamble=(
        f"export PATH={SUPPORT_NCU}:{fake_nvidia_smi_dir(tmp_path)}:/usr/bin:/bin "
        f"TMPDIR={tmp_path} FAKE_NCU_MODE=hang FAKE_NCU_LOG={log}"))
    runner = runner_for(host)
    pid = runner.enqueue(host.name, "ncu", ["python3", "-c", "pass"], timeout=120)
    for _ in range(200):
        if log.exists() and log.read_text().strip():
            break
        await asyncio.sleep(0.05)
    ncu_pid = json.loads(log.read_text().splitlines()[0])["pid"]
    runner.cancel(pid)
    await runner.wait(pid)
    for _ in range(40):
        if not alive(ncu_pid):
            break
        await asyncio.sleep(0.05)
    assert not alive(ncu_pid)


# --- files too big to hold (item 8) ------------------------------------------

RSS_CHILD = (
    "import json, resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "print(json.dumps({'rc': p.returncode, 'out': p.stdout, 'err': p.stderr,\n"
    "  's': time.perf_counter() - t,\n"
    "  'rss_mib': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))\n")


def kernels_measured(*args: str) -> dict:
    """``perftriage kernels ARGS`` in a child, with its peak RSS."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", RSS_CHILD, sys.executable, "-m", "perftriage",
                          "kernels", *args], capture_output=True, text=True, timeout=300)
    return json.loads(run.stdout)


def sparse_line(path: Path, size: int, after: str = "") -> Path:
    """A file whose first line is ``size`` NUL bytes (a hole: no disk used)."""
    with open(path, "wb") as f:
        f.truncate(size)
        f.seek(size)
        f.write(b"\n" + after.encode())
    return path


def test_a_200mb_line_before_the_header_is_skipped_in_bounded_memory(tmp_path):
    """Before: the line was read whole (a 1 GB first line: 2,075 MiB)."""
    f = sparse_line(tmp_path / "long-first-line.csv", 200 * 2**20, FIXTURE.read_text())
    got = kernels_measured(str(f), "--json", "--gpu", "H200")
    assert got["rc"] == 0, got["err"][-500:]
    doc = json.loads(got["out"])
    assert sum(k["launches"] for k in doc["kernels"]) == 190
    assert got["rss_mib"] < 150, got["rss_mib"]


def test_no_header_within_the_cap_stops_there_and_says_so(tmp_path):
    f = sparse_line(tmp_path / "endless-log.csv", 300 * 2**20, FIXTURE.read_text())
    got = kernels_measured(str(f))
    assert got["rc"] == 2 and "Traceback" not in got["err"]
    assert "stopped" in got["err"] and "256 MiB" in got["err"], got["err"]
    assert len(got["err"].strip().splitlines()) == 1
    assert got["rss_mib"] < 150, got["rss_mib"]


def test_a_huge_line_inside_the_csv_is_refused_in_bounded_memory(tmp_path):
    text = FIXTURE.read_text()
    at = text.index("\n", text.index('"ID"')) + 1
    f = tmp_path / "long-row.csv"
    with open(f, "w") as out:
        out.write(text[:at])
        out.write('"9","1",' + "x" * (50 * 2**20) + "\n")
        out.write(text[at:])
    got = kernels_measured(str(f))
    assert got["rc"] == 2 and "Traceback" not in got["err"]
    assert "longer than" in got["err"] and "line " in got["err"], got["err"]
    assert got["rss_mib"] < 150, got["rss_mib"]


async def test_the_probes_fold_on_a_huge_one_line_log_says_it_stopped(request, tmp_path):
    """The host's fold reads ncu's log in bounded chunks (before: a 5 GB
    one-line log, MemoryError on the host)."""
    folder = fake_ncu(tmp_path, """\
        with open(opts["--log-file"], "wb") as f:
            f.truncate(300 * 2**20)
            f.seek(300 * 2**20)
            f.write(b"\\n")
        sys.exit(rc)
        """)
    host = host_for(request, tmp_path, folder)
    p = await run_probe(host, "ncu", ["python3", "-c", "pass"])
    assert p.status == "failed" and "stopped" in p.summary, (p.status, p.summary)


# --- answers too long for the transport (item 12) -----------------------------

WRITE_CSV = """\
import csv
n, width = int(os.environ["KERNELS"]), int(os.environ["NAME_WIDTH"])
with open(opts["--log-file"], "w", newline="") as f:
    w = csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\\n")
    w.writerow(["ID", "Kernel Name", "Device", "Metric Name", "Metric Unit", "Metric Value"])
    for i in range(n):
        name = ("k%05d_" % i).ljust(width, "x") + "<%d>" % i
        for metric, unit, value in (
                ("dram__bytes_read.sum", "byte", 1000 * (i + 1)),
                ("dram__bytes_write.sum", "byte", 10),
                ("gpu__time_duration.sum", "ns", kernel_ns(i, n, os.environ["SKEW"] == "1")),
                ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", 40),
                ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", 10)):
            w.writerow([str(i), name, "0", metric, unit, "{:,}".format(value)])
sys.exit(rc)
"""
def kernel_ns(i, n, skew):
    if skew:  # a real step: a few kernels take the time
        return 1_000_000 if i >= n - 50 else 10
    return 1000 + i


@pytest.mark.parametrize("transport", ["local", pytest.param("ssh", marks=pytest.mark.ssh)])
@pytest.mark.parametrize("kernels, width, chatter, skew", [
    (600, 1100, 0, False),  # the H200 capture's templated names are this long
    (20_000, 30, 0, False),
    (600, 1100, 3_000_000, False),  # and the command prints 3 MB of its own
    (20_000, 1100, 0, True),
    (100_000, 30, 0, False),
])
async def test_an_answer_too_long_for_the_transport_loses_no_kernel_time(
        request, tmp_path, transport, kernels, width, chatter, skew):
    """Before: the result line was cut by the transport's 500 KB + 64 KiB:
    "no result (exit 0)"; then the host sent the biggest kernels that fit and
    summed the rest out of the table: 56–97 % of the kernel time missing
    (issue 47 item 11). Now the host folds the kernels it cannot send by
    name into rows (by base name, name family or first word): every launch
    and all the time are in the table, whatever the number of names."""
    import inspect

    folder = fake_ncu(tmp_path, inspect.getsource(kernel_ns) + WRITE_CSV)
    host = host_for(request, tmp_path, folder, transport=transport)
    host.transport.preamble += (f"\nexport KERNELS={kernels} NAME_WIDTH={width} "
                                f"SKEW={int(skew)}")
    say = f"import sys; sys.stdout.write('y' * {chatter})"
    p = await run_probe(host, "ncu", ["python3", "-c", say], timeout=300)
    assert p.status == "ok", (p.status, p.summary)
    times_ns = sorted((kernel_ns(i, kernels, skew) for i in range(kernels)), reverse=True)
    total = sum(times_ns)
    s = p.detail["ncu"]
    rows = s["kernels"]
    by_name = [k for k in rows if k["names"] == 1]
    folded = [k for k in rows if k["names"] > 1]
    assert 20 <= len(by_name) < kernels and folded
    # nothing lost: every launch, all the time, all the bytes are in the table's rows
    assert s["cut_kernels"] == 0 and s["cut_time_pct"] == 0
    assert sum(k["launches"] for k in rows) == s["launches"] == kernels
    assert sum(k["names"] for k in rows) == kernels
    assert sum(k["time_us"] for k in rows) == pytest.approx(total / 1000, rel=1e-6)
    assert sum(k["bytes_read"] for k in rows) == sum(1000 * (i + 1) for i in range(kernels))
    assert s["grouped_kernels"] == kernels - len(by_name)
    # the kernels kept by name are the biggest by time, their shares of all the time
    named = sorted((k["time_us"] for k in by_name), reverse=True)
    assert named == [t / 1000 for t in times_ns[:len(by_name)]]
    assert by_name[0]["time_pct"] == pytest.approx(100 * times_ns[0] / total, abs=0.01)
    # the folded rows: one name family here (k#_xxx…), named so, counted
    assert folded[0]["name"].startswith("k#_") and "kernels]" in folded[0]["name"]
    assert f"the other {s['grouped_kernels']:,} folded into" in p.summary
    if width > ncu_csv.NAME_CAP:
        assert all(len(k["name"]) <= ncu_csv.NAME_CAP + 20 for k in rows)
        assert len({k["name"] for k in by_name}) == len(by_name)  # still one name per kernel
        assert s["short_names"] == len(by_name) and "shortened" in p.summary


# --- numbers that are not numbers, mixed captures (items 6 and 14) ------------

def _kernels(*args: str):
    from click.testing import CliRunner

    from perftriage.cli import cli

    return CliRunner().invoke(cli, ["kernels", *args])


def _capture_with(tmp_path: Path, edit, source: Path = FIXTURE) -> Path:
    """The real capture with ``edit(rows)`` applied to its CSV rows."""
    import csv
    import io

    text = source.read_text()
    at = text.index('"ID"')
    rows = list(csv.reader(io.StringIO(text[at:])))
    edit(rows)
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path = tmp_path / "edited.csv"
    path.write_text(text[:at] + out.getvalue())
    return path


def _set(rows, metric: str, value: str, unit: str | None = None, launch: str = "3") -> None:
    header = rows[0]
    i_id, i_m, i_u, i_v = (header.index(c) for c in ("ID", "Metric Name", "Metric Unit",
                                                       "Metric Value"))
    for r in rows[1:]:
        if r[i_id] == launch and r[i_m] == metric:
            r[i_v] = value
            if unit is not None:
                r[i_u] = unit
            return
    raise AssertionError("no such row")


@pytest.mark.parametrize("value, unit", [
    ("nan", None), ("inf", None), ("-inf", None), pytest.param("9" * 5000, None, id="5000-nines"),
    ("1e308", "Gbyte"),
    ("-5", None), ("1e308", None),
])
def test_a_bytes_value_that_is_no_amount_is_skipped_and_counted(tmp_path, value, unit):
    """Before: a traceback (NaN, ±inf, 5,000 nines, 1e308 Gbyte), or summed
    into the table (a negative, 1e308 byte)."""
    f = _capture_with(tmp_path, lambda rows: _set(rows, "dram__bytes_read.sum", value, unit))
    r = _kernels(str(f), "--json", "--gpu", "H200")
    assert r.exit_code == 0 and "Traceback" not in r.output, r.output[-800:]
    doc = json.loads(r.output)
    assert doc["bad"] == {"dram__bytes_read.sum": 1}
    assert sum(k["launches"] for k in doc["kernels"]) == 190  # the launch is still counted
    assert sum(k["na_launches"] for k in doc["kernels"]) == 1  # left out of the totals
    assert all(0 <= k["bytes"] < 1e13 and (k["gbs"] or 0) < 10_000 for k in doc["kernels"])
    table = _kernels(str(f), "--gpu", "H200")
    assert table.exit_code == 0 and "not an amount" in table.output, table.output


@pytest.mark.parametrize("flag, value", [
    ("--weights-gb", "inf"), ("--weights-gb", "nan"), ("--peak-gbs", "nan"),
    ("--peak-gbs", "inf"), ("--expert-gb", "nan"), ("--kv-gb", "inf"), ("--weights-gb", "1e309"),
])
def test_a_flag_that_is_no_finite_number_exits_2_naming_it(flag, value):
    extra = ["--weights-gb", "1", "--steps", "2"] if flag in ("--expert-gb", "--kv-gb") else \
        ["--steps", "2"] if flag == "--weights-gb" else []
    r = _kernels(str(FIXTURE), *extra, flag, value)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert flag in r.output and value in r.output


@pytest.mark.parametrize("metric, unit", [
    ("dram__bytes_read.sum", "ns"), ("gpu__time_duration.sum", "Mbyte"),
    ("dram__throughput.avg.pct_of_peak_sustained_elapsed", "byte"),
])
def test_a_unit_that_does_not_fit_its_metric_exits_2(tmp_path, metric, unit):
    f = _capture_with(tmp_path, lambda rows: _set(rows, metric, "100", unit))
    r = _kernels(str(f))
    assert r.exit_code == 2 and metric in r.output and repr(unit) in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1


def test_a_capture_from_two_gpus_is_not_judged_against_one_peak(tmp_path):
    """An H100 launch among an A100's: 160.8 % of the A100's peak, "near
    roofline". Each GPU's capture is its own table."""
    def two_gpus(rows):
        header = rows[0]
        i_id, i_m, i_v = (header.index(c) for c in ("ID", "Metric Name", "Metric Value"))
        for r in rows[1:]:
            if r[i_m] == "device__attribute_display_name":
                r[i_v] = "NVIDIA H100 80GB HBM3" if r[i_id] == "3" else "NVIDIA A100-SXM4-80GB"
    f = _capture_with(tmp_path, two_gpus, FIXTURE.with_name("moe-step-graph.csv"))
    r = _kernels(str(f))
    assert r.exit_code == 2 and "A100" in r.output and "H100" in r.output, r.output
    assert "Traceback" not in r.output


def test_a_header_repeated_mid_file_is_no_kernel(tmp_path):
    """Two captures concatenated (``cat a.csv b.csv``): the second header is
    skipped and said, never a kernel named "Kernel Name"."""
    text = FIXTURE.read_text()
    body = text[text.index('"ID"'):]
    f = tmp_path / "twice.csv"
    f.write_text(text + body)
    r = _kernels(str(f), "--json", "--gpu", "H200")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert "Kernel Name" not in {k["name"] for k in doc["kernels"]}
    assert sum(k["launches"] for k in doc["kernels"]) == 380
    assert any("header" in n and "repeated" in n for n in doc["notes"]), doc["notes"]


def test_the_probes_gpus_named_by_index_must_be_one_model():
    """On the host the GPUs are named by ``nvidia-smi``'s index: launches on
    devices 0 and 1 of different models are refused the same way."""
    from perftriage.core.profile import ncu

    folded = ncu_csv.fold_file(str(FIXTURE))
    folded["devices"] = ["0", "1"]
    listing = "0, NVIDIA H100 80GB HBM3\n1, NVIDIA A100-SXM4-80GB\n"
    folded["gpu"] = ncu_csv.gpu_by_index(folded, listing)
    with pytest.raises(ncu.NcuInputError, match="2 GPUs"):
        ncu.summarize(folded)
    same = {**folded, "gpus": [], "devices": ["0", "1"]}
    listing = "0, NVIDIA H200\n1, NVIDIA H200\n"
    same["gpu"] = ncu_csv.gpu_by_index(same, listing)
    assert ncu.summarize(same).gpu == "NVIDIA H200"
