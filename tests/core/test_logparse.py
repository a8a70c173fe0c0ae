"""Parser tests on the captured-format fixtures and on known format variants."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.support.helpers import FIXTURES
from perftriage.core.model import events as ev
from perftriage.core.parse import batch_scan as bs
from perftriage.core.parse import logparse as lp
from perftriage.core.parse.log_metrics import LogMetrics
from perftriage.core.model.reducer import replay

LOGS = FIXTURES / "logs"


def metrics_of(name: str) -> list[lp.Metric]:
    with open(LOGS / name, encoding="utf-8") as fh:
        return list(lp.iter_metrics(fh))


def test_sglang_fixture_metrics() -> None:
    ms = metrics_of("sglang-0.5.23-tp8.log")
    assert [m.kind for m in ms] == ["prefill", "prefill", "decode", "decode", "decode",
                                    "prefill", "decode", "decode"]
    d = ms[2]
    assert (d.line, d.ts, d.engine, d.gen_tps, d.running, d.queued, d.token_usage) == (
        19, "2026-11-28 09:16:06", "sglang", 10.31, 1, 0, 0.0)
    p = ms[5]
    assert (p.line, p.input_tps, p.queued, p.gen_tps) == (23, 5120.77, 48, None)
    assert ms[-1].gen_tps == 405.66 and ms[-1].token_usage == 0.16


def test_sglang_fixture_milestones_and_errors() -> None:
    lines = (LOGS / "sglang-0.5.23-tp8.log").read_text().splitlines()
    m = LogMetrics()
    m.feed(lines, 1)
    names = [x.name for x in m.milestones]
    for expected in ("weights loaded", "KV cache allocated", "CUDA graph captured", "ready"):
        assert expected in names
    assert m.ready
    assert m.errors == 1  # Decode out of memory
    assert m.retractions == 1  # KV cache pool is full: a warning, not fatal
    assert m.latest_gen_tps == 405.66
    assert m.ms_per_token == pytest.approx(1000 / 405.66)


def test_vllm_fixture_stats() -> None:
    ms = metrics_of("vllm-0.33.0.log")
    assert [(m.line, m.kind, m.engine) for m in ms] == [
        (7, "stats", "vllm"), (8, "stats", "vllm"), (9, "stats", "vllm")]
    first = ms[0]
    assert (first.ts, first.gen_tps, first.input_tps, first.running, first.queued) == (
        "11-28 09:23:12", 50.3, 1503.9, 1, 0)
    assert first.token_usage == pytest.approx(0.001)


@pytest.mark.parametrize(
    "line, expected",
    [
        # period after "batch" and a trailing ", " (older sglang)
        ("[2025-01-02 03:04:05 TP0] Decode batch. #running-req: 3, #token: 9, token usage: 0.02, "
         "gen throughput (token/s): 77.50, #queue-req: 1, ",
         ("decode", 77.5, None, 3, 1, 0.02, "2025-01-02 03:04:05")),
        # no rank tag (tp=1), milliseconds (SGLANG_LOG_MS)
        ("[2025-01-02 03:04:05.123] Decode batch, #running-req: 1, #token: 10, token usage: 0.00, "
         "cuda graph: True, gen throughput (token/s): 100.0, #queue-req: 0",
         ("decode", 100.0, None, 1, 0, 0.0, "2025-01-02 03:04:05.123")),
        # DP/TP/EP rank tags
        ("[2025-01-02 03:04:05 DP0 TP0 EP0] Prefill batch, #new-seq: 2, #new-token: 100, "
         "#cached-token: 0, token usage: 0.10, #running-req: 5, #queue-req: 7, "
         "input throughput (token/s): 1234.5",
         ("prefill", None, 1234.5, 5, 7, 0.1, "2025-01-02 03:04:05")),
        # old prefill without input throughput
        ("[2024-06-01 10:00:00 TP3] Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, "
         "cache hit rate: 0.00%, token usage: 0.00, #running-req: 0, #queue-req: 0",
         ("prefill", None, None, 0, 0, 0.0, "2024-06-01 10:00:00")),
        # vLLM without the (APIServer pid=N) prefix, with a year, no Engine tag, optional fields
        ("INFO 2025-11-28 09:23:12 [loggers.py:80] Avg prompt throughput: 12.0 tokens/s, "
         "Avg generation throughput: 33.3 tokens/s, Running: 4 reqs, Swapped: 0 reqs, "
         "Pending: 2 reqs, GPU KV cache usage: 5.0%, CPU KV cache usage: 0.0%.",
         ("stats", 33.3, 12.0, 4, 2, 0.05, "2025-11-28 09:23:12")),
        # vLLM with milliseconds and the prefix
        ("(APIServer pid=7) INFO 11-28 09:23:12.456 [loggers.py:271] Engine 000: Avg prompt "
         "throughput: 0.0 tokens/s, Avg generation throughput: 61.8 tokens/s, Running: 1 reqs, "
         "Waiting: 0 reqs, GPU KV cache usage: 0.2%, Prefix cache hit rate: 0.0%",
         ("stats", 61.8, 0.0, 1, 0, 0.002, "11-28 09:23:12.456")),
    ],
)
def test_format_variants(line: str, expected: tuple) -> None:
    m = lp.parse_line(line)
    assert isinstance(m, lp.Metric)
    got = (m.kind, m.gen_tps, m.input_tps, m.running, m.queued, m.token_usage, m.ts)
    assert got[:5] == expected[:5]
    assert got[5] == pytest.approx(expected[5])
    assert got[6] == expected[6]


@pytest.mark.parametrize(
    "line",
    [
        "",
        "random garbage",
        "[2025-01-02 03:04:05] Decode batch",  # no fields at all: a metric with nulls, not error
        "[not a date] Decode batch, #running-req: x",
        "INFO 11-28 09:23:12 [x.py:1] hello",
        "Traceback (most recent call last):",
        "\x00\xff\ufffd" * 10,
        "batch throughput batch throughput",
    ],
)
def test_unknown_lines_never_raise(line: str) -> None:
    rec = lp.parse_line(line)
    assert rec is None or isinstance(rec, (lp.Metric, lp.Milestone))


def test_fatal_and_error_patterns() -> None:
    for text in ("torch.OutOfMemoryError: CUDA out of memory. Tried", "Decode out of memory.",
                 "NCCL error in: x", "watchdog timeout", "Watchdog timeout",
                 "Traceback (most recent call last):"):
        assert lp.is_fatal(text) and lp.is_error(text)
    # SGLang 0.5.23 managers/scheduler.py:4526 logs it with logger.warning: the server goes on
    kv = ("[2026-11-28 09:18:30 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3, "
          "#new_tokens_gained: 2048, #new_token_ratio: 0.5000 -> 0.8000")
    assert not lp.is_fatal(kv) and not lp.is_error(kv)
    assert lp.is_error("ValueError: bad") and lp.is_error("ERROR 11-28 x")
    assert not lp.is_error("INFO all good, no errors here")
    assert lp.ms_per_token(400.0) == 2.5 and lp.ms_per_token(0.0) is None


def test_reducer_derives_metrics_deterministically() -> None:
    lines = (LOGS / "sglang-0.5.23-tp8.log").read_text().splitlines()
    events = [ev.LogSourceOpened(source_id="s1", host="h", path="x.log")]
    events += [ev.LogLines(source_id="s1", lines=lines[i:i + 5]) for i in range(0, len(lines), 5)]
    a, b = replay(events), replay(events)
    ma, mb = a.logs["s1"].metrics, b.logs["s1"].metrics
    assert list(ma.gen_tps) == list(mb.gen_tps) == [10.31, 10.29, 10.34, 402.18, 405.66]
    assert list(ma.input_tps) == [0.0, 311.42, 5120.77]
    assert ma.last_decode.line == 25
    assert a.log_batches[-1] == ("s1", len(lines))


def _reference_feed(lines: list[str], first_line: int) -> LogMetrics:
    """The per-line algorithm that LogMetrics.feed must match (one call per line)."""
    m = LogMetrics()
    for n, line in enumerate(lines, first_line):
        if not lp._worth_a_look(line):
            continue
        rec = lp._parse_general(line)
        if not isinstance(rec, lp.Metric) and lp.FATAL_RE.search(line) is not None:
            m.errors += 1
        if rec is None:
            continue
        rec.line = n
        if isinstance(rec, lp.Milestone):
            m.engine = m.engine or rec.engine
            m.milestones.append(rec)
            continue
        m.add(rec)
    return m


def _fixture_lines() -> list[str]:
    out: list[str] = []
    for p in sorted((FIXTURES / "logs").glob("*.log")):
        out += p.read_text(errors="replace").splitlines()
    return out


def test_batch_scan_and_fast_paths_match_the_general_parser() -> None:
    from perftriage.simulator.sglang_sim import Steady, startup_lines

    sim = Steady(seed=7, error_every=13)
    lines = [text for _, text in startup_lines()] + [sim.line() for _ in range(3000)]
    lines += _fixture_lines()
    lines += [
        ("[2026-11-28 09:16:06 TP0] Decode batch, #running-req: 3, #token: 9, token usage: 0.10, "
         "cuda graph: ERROR, gen throughput (token/s): 12.5, #queue-req: 0"),  # odd value
        ("[2026-11-28 09:16:06] Decode batch. #running-req: 3, #token: 9, token usage: 0.10, "
         "gen throughput (token/s): 12.5, #queue-req: 0, "),
        ("(APIServer pid=1) INFO 11-28 09:23:12 [loggers.py:271] Engine 000: Avg prompt throughput: "
         "1.0 tokens/s, Avg generation throughput: 99.5 tokens/s, Running: 4 reqs, Waiting: 0 reqs, "
         "GPU KV cache usage: 5.1%"),
        "NCCL error: unhandled", "RuntimeError: CUDA out of memory", "plain line",
    ]
    for line in lines:  # the fast paths give what the general parser gives
        assert lp.parse_line(line) == lp._parse_general(line)
    # in batches of odd sizes, against the per-line reference
    got = LogMetrics()
    pos = 0
    for size in (1, 7, 500, 64, 2000, 10_000):
        got.feed(lines[pos:pos + size], pos + 1)
        pos += size
    ref = _reference_feed(lines[:pos], 1)
    for attr in ("engine", "count", "errors", "last", "last_decode", "last_prefill"):
        assert getattr(got, attr) == getattr(ref, attr), attr
    for attr in ("gen_tps", "input_tps", "running", "queued", "token_usage", "milestones"):
        assert list(getattr(got, attr)) == list(getattr(ref, attr)), attr
    # error lines of a batch are exactly the is_error ones
    assert bs.scan(lines).errors == [i for i, ln in enumerate(lines) if lp.is_error(ln)]
    assert bs.scan(lines).matters() == [
        i for i, ln in enumerate(lines)
        if lp._worth_a_look(ln) and (lp.parse_line(ln) is not None or lp.is_fatal(ln))
    ]


# what the per-line gate alone decides: the prefilter never proves anything absent
NO_PREFILTER = SimpleNamespace(absent_from=lambda text: False)


def _scan_without_re2(lines: list[str], monkeypatch) -> tuple[list, list]:
    with monkeypatch.context() as m:
        m.setattr(bs, "_RARE", NO_PREFILTER)
        found = bs.scan(list(lines))
    return _normal(found)


def _normal(found: bs.Scan) -> tuple[list, list]:
    """A scan's meaning: the lines that say something (fast decode lines as
    their numbers), in line order, and the error lines."""
    f = found.fast
    fast = [(i, (t, r, u, g, q), False)
            for i, t, r, u, g, q in zip(f.fast, f.ts, f.running, f.usage, f.gen, f.queued)]
    said = [it for it in found.records() if it[1] is not None or it[2]]
    return sorted(fast + said, key=lambda it: it[0]), found.errors


def test_the_prefilter_proves_plain_text_free_of_rare_needles() -> None:
    # the flood path: RE2 proves a batch of ordinary lines has no rare needle
    assert bs._RARE.absent_from("Decode batch. #running-req: 8, gen throughput (token/s): 1.0")
    assert not bs._RARE.absent_from("".join(bs.RARE_NEEDLES[:1]))


def test_a_clean_batch_is_gated_in_one_pass_and_scans_as_the_per_line_gate(monkeypatch) -> None:
    from perftriage.simulator.sglang_sim import Steady

    sim = Steady(seed=3, error_every=10**9)  # no error lines
    req = '[2026-11-28 09:15:37] INFO:     127.0.0.1:51240 - "POST /v1/batches HTTP/1.1" 200 OK'
    lines = [sim.line() if i % 3 else req for i in range(3000)]
    assert bs._RARE.absent_from("\n".join(lines))  # the RE2 path, not the fallback
    assert bs._candidates(lines) == [i for i, ln in enumerate(lines) if "batch" in ln]
    assert _normal(bs.scan(lines)) == _scan_without_re2(lines, monkeypatch)
    assert bs.scan(lines).metric_offsets()  # it found the decode lines


_FRAGMENTS = [
    *bs.RARE_NEEDLES, *(n[:-1] for n in bs.RARE_NEEDLES), "batch", "Decode batch, ",
    "Prefill batch. ", "throughput", "Avg prompt throughput: 1.0 tokens/s, ",
    "Error: ", "Exception: ", "ERROR", "KV cache pool is full", "CUDA out of memory",
    "The server is fired up and ready to roll!", "[2026-11-28 09:16:06 TP0] ",
    "INFO 11-28 09:23:12 [loggers.py:271] ", "Capture cuda graph end", "Graph capturing finished",
    "é", "\udcff", "\x00", " ", ", ", "#running-req: 3", "gen throughput (token/s): 12.5",
]


def test_the_re2_prefilter_never_changes_a_scan(monkeypatch) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    line = st.lists(st.one_of(st.sampled_from(_FRAGMENTS), st.text(max_size=6)),
                    max_size=6).map("".join)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(line, min_size=1, max_size=40))
    def check(lines: list[str]) -> None:
        assert _normal(bs.scan(lines)) == _scan_without_re2(lines, monkeypatch)

    check()


def test_the_re2_prefilter_never_changes_a_scan_of_real_logs(monkeypatch) -> None:
    """Real server logs (SGLang and vLLM fixtures, and the SGLang-format log
    of the H200 stand-in run) in batches of 4 lines: the clean ones take the RE2
    path, the others the per-line gate, and every scan is what the per-line
    gate alone gives."""
    fixtures = FIXTURES
    paths = [*sorted((fixtures / "logs").glob("*.log")), fixtures / "gpm" / "standin-server.log"]
    clean = 0
    for path in paths:
        lines = path.read_text(errors="replace").splitlines()
        for start in range(0, len(lines), 4):
            batch = lines[start:start + 4]
            clean += bs._RARE.absent_from("\n".join(batch))
            assert _normal(bs.scan(batch)) == _scan_without_re2(batch, monkeypatch), (path, start)
    assert clean > 0  # the RE2 path was taken, not only the fallback
