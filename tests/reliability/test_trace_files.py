"""Trace files go through one bounded reader: regular files only, a cap on
the bytes on disk and on the bytes once decompressed (gzip streamed, never
expanded past the cap), kernel names cut before they are classified, and
every file that cannot be summarised exits 2 with one line naming it (no
traceback, no hang, no nonsense at exit 0)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from perftriage.cli import cli
from perftriage.core.profile import reader
from perftriage.core.profile.model import TraceError
from perftriage.core.profile.summarize import summarize_files
from tests.support.helpers import FIXTURES

REPO = Path(__file__).resolve().parents[2]
PROFILE = FIXTURES / "profile"
NSYS_HEAD = "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"


def kernel(name: str = "nvjet_a", ts: float = 0, dur: float = 5, **extra) -> dict:
    return {"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "name": name, "ts": ts, "dur": dur,
            "args": {}, **extra}


def write_trace(path: Path, events: list[dict]) -> Path:
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def trace_cli(*args: str):
    return CliRunner().invoke(cli, ["trace", *args])


def assert_exit_2_naming(res, path: Path, *words: str) -> None:
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output and res.exception is None or \
        isinstance(res.exception, SystemExit), res.output
    assert str(path) in res.output, res.output
    for w in words:
        assert w in res.output, res.output
    assert len(res.output) < 600, res.output  # one line, not the file echoed


def perftriage(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "tui")}
    return subprocess.run([sys.executable, "-m", "perftriage", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)


def gzip_of_repeated(path: Path, block: bytes, times: int, tail: bytes = b"") -> Path:
    """A gzip of ``block * times + tail`` written without holding it."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as fh:
        for _ in range(times):
            fh.write(comp.compress(block))
        fh.write(comp.compress(tail))
        fh.write(comp.flush())
    return path


# --- what is not a regular file is never read ---------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dev-urandom"])
def test_a_fifo_or_a_device_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    odd = tmp_path / "odd-TP-0.trace.json.gz"
    if kind == "fifo":
        os.mkfifo(odd)
    else:
        odd.symlink_to("/dev/zero" if kind == "dev-zero" else "/dev/urandom")
    r = perftriage("trace", str(odd), timeout=30)  # before: hung (FIFO) or grew to 5 GiB
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert str(odd) in r.stderr and "not a regular file" in r.stderr


def test_the_child_process_parser_refuses_a_fifo_too(tmp_path: Path) -> None:
    import asyncio

    from perftriage.services.profile.worker import summarize_in_child

    fifo = tmp_path / "x-TP-0.trace.json"
    os.mkfifo(fifo)
    with pytest.raises(TraceError, match="not a regular file"):
        asyncio.run(asyncio.wait_for(summarize_in_child([fifo]), 30))


# --- caps on the bytes ------------------------------------------------------------------


def test_a_gzip_bomb_stops_at_the_cap_without_expanding(tmp_path: Path) -> None:
    bomb = gzip_of_repeated(tmp_path / "bomb-TP-0.trace.json.gz", b"\0" * (1 << 20), 64)
    assert bomb.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(TraceError, match=r"more than the 4 MiB limit") as err:
            reader.read_trace_bytes(str(bomb), reader.TraceLimits(max_mb=4))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.value.path == str(bomb)
    assert peak < 12 << 20  # the cap and a chunk, never the 64 MiB it expands to


def test_gzipped_whitespace_past_the_cap_is_refused_by_the_cli(tmp_path: Path) -> None:
    # before: 2 MB of gzipped whitespace in front of a trace ran at exit 0 with 4.1 GiB
    ws = gzip_of_repeated(tmp_path / "ws-TP-0.trace.json.gz", b" " * (1 << 20), 40,
                          tail=json.dumps({"traceEvents": [kernel()]}).encode())
    res = trace_cli("--max-trace-mb", "16", str(ws))
    assert_exit_2_naming(res, ws, "16 MiB", "--max-trace-mb")


def test_a_plain_file_over_the_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(3 << 20)  # sparse: 3 MiB of NULs
    res = trace_cli("--max-trace-mb", "2", str(big))
    assert_exit_2_naming(res, big, "2 MiB")


def test_the_cap_comes_from_the_config(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text("[profile]\nmax_trace_mb = 1\n")
    path = gzip_of_repeated(tmp_path / "t.json.gz", b" " * (1 << 20), 2,
                            tail=json.dumps({"traceEvents": [kernel()]}).encode())
    res = CliRunner().invoke(cli, ["--config", str(cfg), "trace", str(path)])
    assert_exit_2_naming(res, path, "1 MiB", "max_trace_mb")
    # the option overrides the config: the same file under a larger cap reads
    res = CliRunner().invoke(cli, ["--config", str(cfg), "trace", "--max-trace-mb", "8",
                                   "--json", str(path)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["kernels"][0]["name"] == "nvjet_a"


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e400", '"x"'])
def test_a_bad_cap_in_the_config_is_a_config_error(tmp_path: Path, value: str) -> None:
    from perftriage.core.store.config import ConfigError, parse

    with pytest.raises(ConfigError) as err:
        parse(f"[profile]\nmax_trace_mb = {value}\n", "c.toml")
    assert err.value.line == 2


@pytest.mark.parametrize("cut", ["truncated", "trailing garbage", "concatenated"])
def test_gzip_members_and_damage(tmp_path: Path, cut: str) -> None:
    body = json.dumps({"traceEvents": [kernel()]}).encode()
    path = tmp_path / "t.json.gz"
    if cut == "truncated":
        path.write_bytes(gzip.compress(body)[:-12])
        with pytest.raises(TraceError, match="truncated"):
            summarize_files([path])
    elif cut == "trailing garbage":
        path.write_bytes(gzip.compress(body) + b"garbage")
        with pytest.raises(TraceError, match="gzip"):
            summarize_files([path])
    else:  # gzip allows several members one after the other
        path.write_bytes(gzip.compress(body[:20]) + gzip.compress(body[20:]))
        assert summarize_files([path]).kernels[0].name == "nvjet_a"


# --- what the decoder meets ------------------------------------------------------------------


@pytest.mark.parametrize("where", ["args", "event", "document"])
def test_json_nested_100k_deep_exit_2(tmp_path: Path, where: str) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    ev = '{"ph":"X","cat":"kernel","name":"k","ts":0,"dur":1,%s}' % (
        f'"args":{{"stream":7,"grid":{deep}}}' if where == "args" else f'"stack":{deep}')
    doc = '{"traceEvents":[%s]%s}' % (ev, f',"meta":{deep}' if where == "document" else "")
    path = tmp_path / "deep-TP-0.trace.json"
    path.write_text(doc)
    res = trace_cli(str(path))  # before: RecursionError traceback, exit 1
    assert_exit_2_naming(res, path, "nested too deeply")


@pytest.mark.parametrize("ts,dur,why", [
    (0, -5, "negative duration"),
    (-1e308, 1, "time"),
    (1e308, 1e308, "time"),
])
def test_negative_or_runaway_times_are_refused_with_the_event_index(tmp_path: Path, ts, dur,
                                                                    why) -> None:
    path = write_trace(tmp_path / "neg-TP-0.trace.json",
                       [kernel(ts=0, dur=10), {"ph": "M", "name": "x", "pid": 0},
                        kernel(ts=ts, dur=dur)])
    res = trace_cli(str(path))  # before: idle_pct 12500000062.5 and a negative window
    assert_exit_2_naming(res, path, "event 2", why)


def test_names_are_cut_before_they_are_classified(tmp_path: Path) -> None:
    # before: 200 names of 1 MiB took 90 s (0.6 s per name in the classifier)
    names = [f"ncclDevKernel_{i:03d}_" + "x" * (1 << 20) for i in range(40)]
    path = write_trace(tmp_path / "long-TP-0.trace.json",
                       [kernel(name=n, ts=10 * i, dur=1) for i, n in enumerate(names)]
                       + [kernel(name=names[0], ts=1000, dur=1)])
    s = summarize_files([path])
    assert len(s.kernels) == 40  # names that differ only past the cut stay apart
    assert all(len(k.name) <= reader.MAX_NAME_CHARS + 40 for k in s.kernels)
    assert {k.bucket for k in s.kernels} == {"communication"}
    assert max(k.calls for k in s.kernels) == 2
    cut = reader.cut_name(names[0])
    assert cut.startswith(names[0][:reader.MAX_NAME_CHARS]) and "chars" in cut
    assert reader.cut_name("short") == "short"


def test_too_many_distinct_kernel_names_is_refused(tmp_path: Path) -> None:
    n = reader.MAX_KERNEL_NAMES + 1
    path = write_trace(tmp_path / "many-TP-0.trace.json",
                       [kernel(name=f"k{i}", ts=i, dur=1) for i in range(n)])
    res = trace_cli(str(path))
    assert_exit_2_naming(res, path, f"{reader.MAX_KERNEL_NAMES}")


# --- nsys CSV ------------------------------------------------------------------------------


def nsys_file(tmp_path: Path, rows: list[str], name: str = "kern.csv") -> Path:
    path = tmp_path / name
    path.write_text("Processing [x.sqlite] with [cuda_gpu_kern_sum.py]...\n\n" + NSYS_HEAD
                    + "".join(r + "\n" for r in rows))
    return path


@pytest.mark.parametrize("total,calls,why", [
    ("1000", "inf", "Instances"),
    ("1000", "1e400", "Instances"),
    ("1000", "9" * 5000, "Instances"),
    ("1000", "-3", "Instances"),
    ("1000", "2.5", "Instances"),
    ("nan", "3", "Total Time"),
    ("-5", "3", "Total Time"),
    ("1e400", "3", "Total Time"),
])
def test_nsys_numbers_that_are_not_counts_or_times(tmp_path: Path, total, calls, why) -> None:
    path = nsys_file(tmp_path, ['50.0,2000,4,500,500,400,600,10,"nvjet_ok"',
                                f'50.0,{total},{calls},1,1,1,1,0,"bad_kernel"'])
    res = trace_cli(str(path))  # before: OverflowError tracebacks; -3 and nan at exit 0
    assert_exit_2_naming(res, path, "line 5", why)


def test_an_nsys_field_over_the_csv_limit_exit_2(tmp_path: Path) -> None:
    path = nsys_file(tmp_path, ['50.0,2000,4,500,500,400,600,10,"' + "n" * (200 << 10) + '"'])
    res = trace_cli(str(path))  # before: _csv.Error traceback
    assert_exit_2_naming(res, path, "line 4")


def test_an_nsys_csv_with_too_many_kernels_is_refused_early(tmp_path: Path) -> None:
    # before: a 44 MB CSV took 1.9 GiB and 64 s
    rows = [f"0.0,{i + 1},1,1,1,1,1,0,k{i}" for i in range(reader.MAX_KERNEL_NAMES + 1)]
    path = nsys_file(tmp_path, rows)
    res = trace_cli(str(path))
    assert_exit_2_naming(res, path, f"{reader.MAX_KERNEL_NAMES}")


def test_nsys_thousands_separators_and_long_names(tmp_path: Path) -> None:
    path = nsys_file(tmp_path, ['60.0,"3,000",3,"1,000",1000,900,1100,10,"' + "gemm" + "y" * 5000 + '"',
                                '40.0,2000,"1,000",2,2,2,2,0,"nvjet_b"'])
    s = summarize_files([path])
    assert [k.calls for k in s.kernels] == [3, 1000]
    assert len(s.kernels[0].name) <= reader.MAX_NAME_CHARS + 40 and s.kernels[0].bucket == "gemm"


# --- the real captures still read the same ------------------------------------------------


def test_the_real_h200_traces_read_the_same_through_the_reader() -> None:
    # the kernel totals against torch's own numbers: tests/cli/test_profile_trace.py
    files = sorted([*PROFILE.glob("eager-*.trace.json.gz"), *PROFILE.glob("graph-*.trace.json.gz")])
    assert len(files) == 3
    for f in files:
        text = reader.read_trace_bytes(str(f), reader.TraceLimits(max_mb=2))
        assert bytes(text) == gzip.decompress(f.read_bytes())
    s = summarize_files(files, limits=reader.TraceLimits(max_mb=2))
    assert s.ranks == 3 and s.idle_pct is not None and 0 < s.idle_pct < 100
    nsys = summarize_files([PROFILE / "nsys-cuda_gpu_kern_sum-graph.csv"])
    graph = summarize_files([PROFILE / "graph-TP-0.trace.json.gz"])
    assert nsys.kernel_ms == pytest.approx(graph.kernel_ms, rel=1e-3)
    assert {k.name: k.calls for k in nsys.kernels} == {k.name: k.calls for k in graph.kernels}


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "over-cap"])
def test_importing_trace_files_copies_only_regular_files_within_the_cap(tmp_path: Path,
                                                                        kind: str) -> None:
    import asyncio

    from perftriage.core.store.config import parse
    from perftriage.services.profile.captures import ProfileCaptures
    from perftriage.services.investigation.session import Session

    odd = tmp_path / "odd-TP-0.trace.json.gz"
    if kind == "fifo":
        os.mkfifo(odd)
    elif kind == "dev-zero":
        odd.symlink_to("/dev/zero")  # before: copied without end
    else:
        gzip_of_repeated(odd, b" " * (1 << 20), 3)
        with open(odd, "ab") as fh:
            fh.truncate(2 << 20)
    session = Session("x", sessions_dir=tmp_path / "s")
    captures = ProfileCaptures(session, None, parse("[profile]\nmax_trace_mb = 1\n"))
    try:
        with pytest.raises(TraceError) as err:
            asyncio.run(asyncio.wait_for(captures.import_files([odd]), 30))
    finally:
        session.close()
    assert err.value.path == str(odd)
    assert ("not a regular file" if kind != "over-cap" else "1 MiB limit") in str(err.value)
    assert not any(p.is_file() for p in (tmp_path / "s").rglob("*.gz"))


def test_a_capture_parses_its_rank_files_under_the_configs_cap(tmp_path: Path) -> None:
    from perftriage.core.store.config import parse
    from perftriage.services.investigation.session import Session
    from perftriage.services.profile.captures import ProfileCaptures

    session = Session("x", sessions_dir=tmp_path / "s")
    try:
        captures = ProfileCaptures(session, None, parse("[profile]\nmax_trace_mb = 7\n"))
        assert captures.request("http://127.0.0.1:30000", 5).max_trace_mb == 7
    finally:
        session.close()


def test_the_built_in_buckets_decide_the_same_through_re2_and_re() -> None:
    # RE2 classifies long names in linear time; it must agree with the table's re
    from perftriage.core.profile.buckets import BUILTIN_RULES, OTHER, Classifier

    def by_re(name: str) -> str:
        import re

        return next((b for b, p in BUILTIN_RULES if re.search(p, name, re.IGNORECASE)), OTHER)

    names = [k.name for f in sorted(PROFILE.glob("*.trace.json.gz"))
             for k in summarize_files([f]).kernels]
    names += ["NCCL_ALLREDUCE", "void fused_MoE_kernel<...>", "xMLA_decode", "amla_x", "Rope",
              "flash_fwd", "ampere_bf16_s16816gemm", "weird \udcff surrogate gemm", "ſoftmax",
              "nvjet_" + "x" * 5000, "Memcpy DtoD (Device -> Device)", "unknown_thing"]
    c = Classifier()
    assert [c.bucket(n) for n in names] == [by_re(n) for n in names]


@pytest.mark.parametrize("event", [b"{}", b'{"ph":"X","cat":"kernel","ts":1,"dur":1}'],
                         ids=["empty-objects", "compact-kernels"])
def test_a_file_of_tiny_objects_is_refused_before_it_is_decoded(tmp_path: Path,
                                                                event: bytes) -> None:
    # each decoded event costs ~90 bytes: 3-byte objects would cost 30x the cap
    limits = reader.TraceLimits(max_mb=4)
    n = limits.max_bytes // reader.BYTES_PER_OBJECT + 1
    path = tmp_path / "tiny-TP-0.trace.json"
    path.write_bytes(b"[" + b",".join([event] * n) + b"]")
    assert path.stat().st_size < limits.max_bytes
    tracemalloc.start()
    try:
        with pytest.raises(TraceError, match="JSON objects") as err:
            summarize_files([path], limits=limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.value.path == str(path) and peak < 3 * limits.max_bytes
    # one object fewer than that is read (and costs a few times the cap at most)
    path.write_bytes(b"[" + b",".join([event] * (n - 1)) + b"]")
    if event == b"{}":  # read whole, then said to hold no kernel at all
        with pytest.raises(TraceError, match="no GPU kernels"):
            summarize_files([path], limits=limits)
    else:
        summarize_files([path], limits=limits)


def test_an_nsys_line_of_many_megabytes_is_never_held_whole(tmp_path: Path) -> None:
    path = nsys_file(tmp_path, ["50.0,2000,4,500,500,400,600,10,nvjet_ok",
                                "50.0,2000,4,500,500,400,600,10," + "\U0001f600" * (8 << 20)])
    tracemalloc.start()
    try:
        with pytest.raises(TraceError, match="line 5"):
            summarize_files([path])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the file's 32 MiB text is held once; the line (128 MiB as a str) never is
    assert peak < 80 << 20
