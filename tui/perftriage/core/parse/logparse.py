"""Metrics and milestones from SGLang / vLLM server logs (pure, no Textual).

One line in, at most one record out: :func:`parse_line` returns a
:class:`Metric` (SGLang ``Decode batch`` / ``Prefill batch``, vLLM's periodic
``Avg prompt throughput ... Avg generation throughput ...``), a
:class:`Milestone` (weights loaded, KV cache allocated, CUDA graph captured,
server ready, ...) or ``None``. A line it does not know is simply not a
metric — never an error.

Format variants tolerated (see tests/fixtures/logs/README.md): "batch." or
"batch," after Decode/Prefill, a trailing ", ", optional or reordered
fields, rank tags (``TP3``, ``DP0 TP0 EP0``) only when present, ``.mmm``
milliseconds, vLLM timestamps with or without a year, with or without a
``(APIServer pid=N)`` prefix and an ``Engine 000:`` tag.

``token_usage`` is a fraction 0..1 for both engines (vLLM logs a percent,
which is divided by 100).

:mod:`~perftriage.core.parse.batch_scan` applies these per batch, and
:class:`~perftriage.core.parse.log_metrics.LogMetrics` keeps the per-source
time series.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import msgspec


SERIES_POINTS = 600

# [2026-11-28 09:16:06 TP0] / [2026-11-28 09:16:06.123 DP0 TP0 EP0] / [2026-11-28 09:15:33],
# optionally behind a Ray actor's prefix "(SchedulerDisaggregationDecodeMixin pid=4242) "
# (with ", ip=10.0.0.1" on a remote node), as sglang/srt/debug_utils/log_parser.py reads it
_SGLANG = re.compile(
    r"^(?:\(\w+ pid=\d+(?:,\s*ip=[\d.]+)?\)\s*)?"
    r"\[(?P<ts>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)(?P<ranks>(?: [A-Z]{2}\d+)*)\] (?P<msg>.*)$"
)
_DP_RANK = re.compile(r" DP(\d+)")
# (APIServer pid=1) INFO 11-28 09:23:12 [loggers.py:271] Engine 000: Avg prompt ...
# INFO 08-15 10:30:12 metrics.py:351] Avg prompt ...   (V0 engine, older releases:
# "%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s", no "[")
# Anything before the process tag is VLLM_LOGGING_PREFIX (vllm/logger.py puts it first).
_VLLM = re.compile(
    r"^.*?(?:\((?P<proc>[^)]*)\) )?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"(?P<ts>(?:\d{4}-)?\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?) "
    r"(?:\[(?P<where>[^\]]*)\]|(?P<file>[\w.-]+:\d+)\]) (?P<msg>.*)$"
)
# "Decode batch, ..." / "Decode batch [1234], ..." (SGLANG_LOG_FORWARD_ITERS) / "Decode batch. ..."
_BATCH = re.compile(r"^(?P<kind>Decode|Prefill) batch(?: \[\d+\])?[.,:]?\s*(?P<rest>.*)$")
_VLLM_ENGINE = re.compile(r"Engine (\d+): ")
# vLLM's perf logger: "Engine 000: MFU: 12.3 TF/s/device 456.7 GB/s/device"
_VLLM_MFU = re.compile(r"MFU: (?P<tf>[\d.]+) TF/s/device (?P<gb>[\d.]+) GB/s/device")
# "key: value" pairs separated by ", " — keys may contain spaces, '#', '(token/s)'
_FIELD = re.compile(r"(?:^|,\s*)(?P<key>[^:,]+?):\s*(?P<val>[^,]*)")
_NUM = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|-?\.\d+")
# a counter, a rate or an index has at most this many digits before the point
# (10^15 tokens/s is no reading); past it the line is kept as text, counted
# (``Scan.unparsed``): 5,000 digits were a ValueError from int(), ``inf`` from
# float() then an OverflowError, and killed the log source they arrived in
MAX_DIGITS = 15


class BadNumber(ValueError):
    """A number in a log line past :data:`MAX_DIGITS` or not finite."""


def bounded_float(text: str) -> float:
    """``text`` (digits, an optional point and fraction, optional ``,``
    grouping) as a float; :class:`BadNumber` past the bounds."""
    whole = text.lstrip("-").split(".", 1)[0].replace(",", "")
    if len(whole) > MAX_DIGITS or len(text) > 4 * MAX_DIGITS:
        raise BadNumber(f"a number of {len(whole):,} digits")
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        raise BadNumber(f"not a number: {text[:40]!r}") from None
    if not math.isfinite(value) or abs(value) >= 10.0 ** MAX_DIGITS:
        raise BadNumber(f"not a finite number below 10^{MAX_DIGITS}: {text[:40]!r}")
    return value


def bounded_int(text: str) -> int:
    """``text`` (digits) as an int; :class:`BadNumber` past the bounds."""
    return int(bounded_float(text))

Engine = Literal["sglang", "vllm"]
# "spec" (vLLM's "SpecDecoding metrics:" line) and "mfu" (vLLM's "MFU:" line)
# carry only an accept length or a bandwidth estimate; they are not decode samples.
Kind = Literal["decode", "prefill", "stats", "spec", "mfu"]


@dataclass(slots=True)
class Metric:
    ts: str
    engine: Engine
    kind: Kind
    gen_tps: float | None = None
    input_tps: float | None = None
    running: int | None = None
    queued: int | None = None
    token_usage: float | None = None
    line: int = 0  # 1-based line number in its source (set by the caller)
    # tokens per decode step with speculative decoding (SGLang "accept len",
    # vLLM "Mean acceptance length"); None without speculation
    spec_accept_len: float | None = None
    cache_hit_rate: float | None = None  # prefix cache hits, a fraction 0..1
    preemptions: int | None = None  # vLLM "Preemptions: N" since the last stats line
    # the data-parallel engine: vLLM "Engine NNN", SGLang's DP rank tag
    engine_index: int | None = None
    # the engine's own estimate of memory read GB/s per GPU (SGLang
    # --enable-mfu-metrics "est. read BW"; vLLM's "MFU:" line, read + write)
    engine_read_gbs: float | None = None
    new_tokens: int | None = None  # SGLang prefill "#new-token"
    cached_tokens: int | None = None  # SGLang prefill "#cached-token"

    def record(self, source: str) -> dict:
        """The public record shape of ``perftriage metrics``."""
        return {
            "source": source,
            "line": self.line,
            "ts": self.ts,
            "engine": self.engine,
            "kind": self.kind,
            "gen_tps": self.gen_tps,
            "input_tps": self.input_tps,
            "running": self.running,
            "queued": self.queued,
            "token_usage": self.token_usage,
            "spec_accept_len": self.spec_accept_len,
            "cache_hit_rate": self.cache_hit_rate,
            "preemptions": self.preemptions,
            "engine_index": self.engine_index,
            "engine_read_gbs": self.engine_read_gbs,
            "new_tokens": self.new_tokens,
            "cached_tokens": self.cached_tokens,
        }


@dataclass(slots=True)
class Milestone:
    ts: str
    engine: Engine
    name: str  # one of MILESTONES' names
    text: str
    line: int = 0


# (substring, engine, milestone name); checked in order, first hit wins
MILESTONES: tuple[tuple[str, Engine, str], ...] = (
    ("Load weight begin", "sglang", "loading weights"),
    ("Load weight end", "sglang", "weights loaded"),
    ("KV Cache is allocated", "sglang", "KV cache allocated"),
    ("CUDA graph end", "sglang", "CUDA graph captured"),
    ("Capture cuda graph end", "sglang", "CUDA graph captured"),
    ("Uvicorn running on", "sglang", "HTTP listening"),
    ("The server is fired up and ready to roll!", "sglang", "ready"),
    ("Model loading took", "vllm", "weights loaded"),
    ("Available KV cache memory", "vllm", "KV cache allocated"),
    ("Graph capturing finished", "vllm", "CUDA graph captured"),
    ("Starting vLLM server on", "vllm", "ready"),
)
_MILESTONE_KEYS = tuple(m[0] for m in MILESTONES)

READY_PATTERNS = {
    "sglang": "The server is fired up and ready to roll!",
    "vllm": "Starting vLLM server on",
}

# Lines that mean the server is in trouble (highlighted, and a failed start
# when they appear before the ready line).
FATAL_PATTERNS: tuple[str, ...] = (
    "Traceback",
    "CUDA out of memory",
    "Decode out of memory",
    "NCCL error",
    "watchdog timeout",
)
# SGLang's retraction under memory pressure (0.5.23 managers/scheduler.py:4526,
# logger.warning): "KV cache pool is full. Retract requests. #retracted_reqs: N,
# #new_tokens_gained: M, #new_token_ratio: a -> b". The server goes on: a warning
# counted in the Logs header and folded xN in the report, never fatal.
KV_RETRACT = "KV cache pool is full. Retract requests."
# Case-sensitive on purpose (plus the capitalised variants seen in the wild):
# a case-insensitive alternation costs ~20 us a line, this one well under 1 us.
FATAL_RE = re.compile(
    "|".join(re.escape(p) for p in FATAL_PATTERNS)
    + "|NCCL Error|nccl error|Watchdog timeout|Watchdog caught collective operation timeout"
)
LEVEL_RE = re.compile(r"\b(CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG)\b")
# An error line: a fatal pattern, an ERROR/CRITICAL level, or "SomeError:" / "Exception:"
ERROR_RE = re.compile(
    FATAL_RE.pattern + r"|\b(?:CRITICAL|FATAL|ERROR)\b|(?:Error|Exception):"
)




def _worth_a_look(line: str) -> bool:
    """Cheap gate (plain ``in`` tests run ~10x faster than one regex
    alternation): could this line be a metric, a milestone or fatal?"""
    return (
        "batch" in line
        or "throughput" in line
        or "out of memory" in line
        or "Traceback" in line
        or "NCCL" in line
        or "nccl" in line
        or "atchdog" in line
        or "pool is full" in line
        or "Load weight" in line
        or "KV C" in line
        or "KV cache" in line
        or "raph" in line
        or "Uvicorn" in line
        or "fired up" in line
        or "Model loading" in line
        or "Starting vLLM" in line
        or "MFU: " in line
    )


def is_fatal(line: str) -> bool:
    return FATAL_RE.search(line) is not None


def is_error(line: str) -> bool:
    # plain `in` gate first: the regex alone costs ~20 us a line (case-insensitive alternation)
    return (
        "rror" in line
        or "RROR" in line
        or "xception" in line
        or "Traceback" in line
        or "of memory" in line
        or "CRITICAL" in line
        or "FATAL" in line
        or "atchdog" in line
        or "NCCL" in line
        or "nccl" in line
    ) and ERROR_RE.search(line) is not None


def _num(text: str) -> float | None:
    m = _NUM.search(text)
    if m is None:
        return None
    return bounded_float(m.group(0))  # BadNumber: the line is kept as text


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    v = _num(text)
    return int(v) if v is not None else None


def _fields(rest: str) -> dict[str, str]:
    return {m.group("key").strip().lower(): m.group("val").strip() for m in _FIELD.finditer(rest)}


def _pick(fields: dict[str, str], *keys: str) -> str | None:
    for k in keys:
        if k in fields:
            return fields[k]
    return None


def _fnum(fields: dict[str, str], *keys: str) -> float | None:
    v = _pick(fields, *keys)
    return _num(v) if v is not None else None


# KV pool usage parts (sglang pool_stats_observer.py): plain pools write "token usage";
# hybrid SWA / SSM pools "full" / "swa" / "mamba usage" (the scheduler's own limit is
# their max, get_max_pool_usage); hisparse "gpu token usage" (device side)
_USAGE_KEYS = ("token usage", "full token usage", "swa token usage", "mamba usage")


def _pool_usage(f: dict[str, str]) -> float | None:
    parts = [v for v in (_fnum(f, k) for k in _USAGE_KEYS) if v is not None]
    if parts:
        return max(parts)
    return _fnum(f, "gpu token usage")


def _sglang_batch(ts: str, msg: str, ranks: str = "") -> Metric | None:
    m = _BATCH.match(msg)
    if m is None:
        return None
    f = _fields(m.group("rest"))
    kind: Kind = "decode" if m.group("kind") == "Decode" else "prefill"
    dp = _DP_RANK.search(ranks)
    new = _int(f.get("#new-token"))
    cached = _int(f.get("#cached-token"))
    hit = None
    if kind == "prefill" and new is not None and cached is not None and new + cached > 0:
        hit = round(cached / (new + cached), 6)  # this batch's prefix-cache hit share
    elif "cache hit rate" in f:  # older prefill lines: "cache hit rate: 12.50%"
        v = _fnum(f, "cache hit rate")
        hit = round(v / 100.0, 6) if v is not None else None
    return Metric(
        ts=ts,
        engine="sglang",
        kind=kind,
        gen_tps=_fnum(f, "gen throughput (token/s)", "gen throughput (tokens/s)")
        if kind == "decode"
        else None,
        input_tps=_fnum(f, "input throughput (token/s)", "input throughput (tokens/s)")
        if kind == "prefill"
        else None,
        running=_int(_pick(f, "#running-req", "#running-reqs")),
        queued=_int(_pick(f, "#queue-req", "#queue-reqs", "#waiting-req")),
        token_usage=_pool_usage(f),
        spec_accept_len=_fnum(f, "accept len"),
        cache_hit_rate=hit,
        engine_index=bounded_int(dp.group(1)) if dp else None,
        engine_read_gbs=_fnum(f, "est. read bw (gb/s per gpu)"),
        new_tokens=new,
        cached_tokens=cached,
    )


def _percent(f: dict[str, str], *keys: str) -> float | None:
    v = _fnum(f, *keys)
    return None if v is None else round(v / 100.0, 6)


def _kv_usage(f: dict[str, str]) -> float | None:
    """"GPU KV cache usage" (or XPU/TPU/..., vLLM's kv_cache_device); V0's
    "CPU KV cache usage" is the swap space, never the pool."""
    if "gpu kv cache usage" in f:
        return _percent(f, "gpu kv cache usage")
    for key in f:
        if key.endswith("kv cache usage") and not key.startswith("cpu "):
            return _percent(f, key)
    return None


def _engine_index(msg: str) -> int | None:
    m = _VLLM_ENGINE.match(msg)
    return bounded_int(m.group(1)) if m else None


def _vllm_stats(ts: str, msg: str, ranks: str = "") -> Metric | None:
    if msg.startswith("SpecDecoding metrics: "):
        f = _fields(msg[len("SpecDecoding metrics: "):])
        return Metric(ts, "vllm", "spec", spec_accept_len=_fnum(f, "mean acceptance length"),
                      engine_index=_engine_index(msg))
    if "MFU: " in msg:
        mfu = _VLLM_MFU.search(msg)
        if mfu is None:
            return None
        return Metric(ts, "vllm", "mfu", engine_read_gbs=bounded_float(mfu.group("gb")),
                      engine_index=_engine_index(msg))
    if "Avg prompt throughput" not in msg and "Avg generation throughput" not in msg:
        return None
    # "Engine 000: Avg …" (V1), "2 Engines Aggregated: Avg …" (data parallel,
    # already a total: no engine index), "Avg …" (V0): the fields start at "Avg "
    index = _engine_index(msg)
    msg = msg[msg.find("Avg "):]
    f = _fields(msg.strip())
    return Metric(
        ts=ts,
        engine="vllm",
        kind="stats",
        gen_tps=_fnum(f, "avg generation throughput"),
        input_tps=_fnum(f, "avg prompt throughput"),
        running=_int(_pick(f, "running")),
        queued=_int(_pick(f, "waiting", "pending")),
        token_usage=_kv_usage(f),
        cache_hit_rate=_percent(f, "prefix cache hit rate"),
        preemptions=_int(f.get("preemptions")),
        engine_index=index,
    )


def _milestone(line: str) -> tuple[Engine, str] | None:
    for key, engine, name in MILESTONES:
        if key in line:
            return engine, name
    return None


# Fast paths for the current SGLang decode and prefill lines (most metric
# lines). A DP rank tag means several engines, which the general parser
# tells apart (engine_index), so those lines are not on the fast path (nor
# are spec, MFU, hybrid-pool or disaggregation lines). Any other shape
# falls through to the tolerant general parser below, which gives the same
# record for these shapes (tests/core/test_logparse.py checks). SGLang 0.5.23's
# prefill line has no "#token:" part; older ones had.
_DECODE_FAST = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)(?: (?:TP|PP|EP|CP)\d+)*\] Decode batch[.,] "
    r"#running-req: (\d{1,15}), #token: \d+, token usage: (\d{1,15}(?:\.\d{1,15})?), (?:cuda graph: \w+, )?"
    r"gen throughput \(token/s\): (\d{1,15}(?:\.\d{1,15})?), #queue-req: (\d{1,15})(?:, )?$"
)
_PREFILL_FAST = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)(?: (?:TP|PP|EP|CP)\d+)*\] Prefill batch[.,] "
    r"#new-seq: \d+, #new-token: (\d{1,15}), #cached-token: (\d{1,15}), (?:#token: \d+, )?"
    r"token usage: (\d{1,15}(?:\.\d{1,15})?), #running-req: (\d{1,15}), #queue-req: (\d{1,15}), "
    r"#pending-token: \d+, cuda graph: \w+, input throughput \(token/s\): (\d{1,15}(?:\.\d{1,15})?)(?:, )?$"
)


def parse_line(line: str) -> Metric | Milestone | None:
    """The metric or milestone in one log line, or None (also for a line
    whose numbers are past the bounds: :func:`parse_line_strict` says so)."""
    try:
        return parse_line_strict(line)
    except BadNumber:
        return None


def parse_line_strict(line: str) -> Metric | Milestone | None:
    """:func:`parse_line`, raising :class:`BadNumber` for a line whose
    numbers are past the bounds."""
    fast = _DECODE_FAST.match(line)
    if fast is not None:
        ts, running, usage, gen, queued = fast.groups()
        return Metric(ts, "sglang", "decode", float(gen), None, int(running), int(queued),
                      float(usage))
    fast = _PREFILL_FAST.match(line)
    if fast is not None:
        ts, new, cached, usage, running, queued, inp = fast.groups()
        return prefill_metric(ts, float(usage), int(running), int(queued), float(inp),
                              int(new), int(cached))
    return _parse_general(line)


def prefill_metric(ts: str, usage: float, running: int, queued: int, inp: float,
                   new: int, cached: int, line: int = 0) -> Metric:
    """The record of an SGLang prefill line of the common shape."""
    total = new + cached
    return Metric(ts, "sglang", "prefill", None, inp, running, queued, usage, line,
                  cache_hit_rate=round(cached / total, 6) if total else None,
                  new_tokens=new, cached_tokens=cached)


# (line prefix, engine, metric parser for the message after the prefix)
_ENGINES: tuple[tuple[re.Pattern[str], Engine, Callable[[str, str, str], Metric | None]], ...] = (
    (_SGLANG, "sglang", _sglang_batch), (_VLLM, "vllm", _vllm_stats))


def _parse_general(line: str) -> Metric | Milestone | None:
    """Any line: an SGLang or vLLM metric, a startup milestone, or None."""
    metric_hint = "batch" in line or "throughput" in line or "MFU: " in line
    if not metric_hint and not any(k in line for k in _MILESTONE_KEYS):
        return None
    line = line.rstrip("\r\n")
    if line.startswith("{"):
        return _vllm_json(line, metric_hint)
    for pattern, engine, metric_of in _ENGINES:
        m = pattern.match(line)
        if m is None:
            continue
        ts, msg = m.group("ts"), m.group("msg")
        if metric_hint:
            metric = metric_of(ts, msg, m.groupdict().get("ranks") or "")
            if metric is not None:
                return metric
        hit = _milestone(msg)
        return Milestone(ts, engine, hit[1], msg) if hit else None
    return None


class _JsonRecord(msgspec.Struct):
    """A vLLM log line in its JSON format (vllm/logger.py: pythonjsonlogger
    with vllm/logging_utils/formatter.py's JSON_FORMAT)."""

    asctime: str = ""
    message: str = ""


_JSON_RECORD = msgspec.json.Decoder(_JsonRecord)


def _vllm_json(line: str, metric_hint: bool) -> Metric | Milestone | None:
    try:
        rec = _JSON_RECORD.decode(line)
    except (msgspec.DecodeError, UnicodeEncodeError):
        return None
    if metric_hint:
        metric = _vllm_stats(rec.asctime, rec.message)
        if metric is not None:
            return metric
    hit = _milestone(rec.message)
    return Milestone(rec.asctime, hit[0], hit[1], rec.message) if hit else None


def iter_metrics(lines, first_line: int = 1):
    """(Metric) for every metric line of ``lines``, line numbers from ``first_line``."""
    for n, line in enumerate(lines, first_line):
        rec = parse_line(line)
        if isinstance(rec, Metric):
            rec.line = n
            yield rec


def ms_per_token(gen_tps: float | None) -> float | None:
    """Decode time per token at batch 1: 1000 / gen throughput."""
    if not gen_tps:
        return None
    return 1000.0 / gen_tps


def token_latency(gen_tps: float | None, running: int | None,
                  accept_len: float | None = None) -> tuple[float | None, str]:
    """Per-request ms per token and its label, batch-aware.

    ``gen_tps`` counts the tokens of every running request, so one request
    sees a token every ``1000 x running / gen_tps`` ms. Only at batch 1 is
    that the batch-1 latency (``ms/tok@bs1``); otherwise it is labelled with
    the batch it was measured at.

    With speculative decoding (``accept_len`` tokens accepted per step) the
    GPU works per step, not per token: a step takes ``accept_len`` times a
    token's share, and the label says ``ms/step``."""
    if not gen_tps:
        return None, "ms/tok"
    batch = running if running and running > 1 else 1
    if accept_len and accept_len > 0:
        label = "ms/step@bs1" if batch == 1 else f"ms/step/req@bs{batch}"
        return 1000.0 * batch * accept_len / gen_tps, label
    label = "ms/tok@bs1" if batch == 1 else f"ms/tok/req@bs{batch}"
    return 1000.0 * batch / gen_tps, label
