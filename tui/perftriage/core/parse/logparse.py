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

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal


SERIES_POINTS = 600

# [2026-11-28 09:16:06 TP0] / [2026-11-28 09:16:06.123 DP0 TP0 EP0] / [2026-11-28 09:15:33]
_SGLANG = re.compile(
    r"^\[(?P<ts>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)(?P<ranks>(?: [A-Z]{2}\d+)*)\] (?P<msg>.*)$"
)
# (APIServer pid=1) INFO 11-28 09:23:12 [loggers.py:271] Engine 000: Avg prompt ...
# INFO 08-15 10:30:12 metrics.py:351] Avg prompt ...   (V0 engine, older releases:
# "%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s", no "[")
_VLLM = re.compile(
    r"^(?:\((?P<proc>[^)]*)\) )?(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"(?P<ts>(?:\d{4}-)?\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?) "
    r"(?:\[(?P<where>[^\]]*)\]|(?P<file>[\w.-]+:\d+)\]) (?P<msg>.*)$"
)
_BATCH = re.compile(r"^(?P<kind>Decode|Prefill) batch[.,:]?\s*(?P<rest>.*)$")
# "key: value" pairs separated by ", " — keys may contain spaces, '#', '(token/s)'
_FIELD = re.compile(r"(?:^|,\s*)(?P<key>[^:,]+?):\s*(?P<val>[^,]*)")
_NUM = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")

Engine = Literal["sglang", "vllm"]
Kind = Literal["decode", "prefill", "stats"]


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
    "KV cache pool is full",
)
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
        or "pool is full" in line
        or "NCCL" in line
        or "nccl" in line
    ) and ERROR_RE.search(line) is not None


def _num(text: str) -> float | None:
    m = _NUM.search(text)
    if m is None:
        return None
    try:
        return float(m.group(0).replace(",", ""))
    except ValueError:
        return None


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


def _sglang_batch(ts: str, msg: str) -> Metric | None:
    m = _BATCH.match(msg)
    if m is None:
        return None
    f = _fields(m.group("rest"))
    kind: Kind = "decode" if m.group("kind") == "Decode" else "prefill"
    usage = _fnum(f, "token usage", "full token usage")
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
        token_usage=usage,
    )


def _vllm_stats(ts: str, msg: str) -> Metric | None:
    if "Avg prompt throughput" not in msg and "Avg generation throughput" not in msg:
        return None
    # "Engine 000: Avg …" (V1), "2 Engines Aggregated: Avg …" (data parallel),
    # "Avg …" (V0): the fields start at the first "Avg "
    msg = msg[msg.find("Avg "):]
    f = _fields(msg.strip())
    usage = _fnum(f, "gpu kv cache usage", "kv cache usage")
    if usage is not None:
        usage = round(usage / 100.0, 6)
    return Metric(
        ts=ts,
        engine="vllm",
        kind="stats",
        gen_tps=_fnum(f, "avg generation throughput"),
        input_tps=_fnum(f, "avg prompt throughput"),
        running=_int(_pick(f, "running")),
        queued=_int(_pick(f, "waiting", "pending")),
        token_usage=usage,
    )


def _milestone(line: str) -> tuple[Engine, str] | None:
    for key, engine, name in MILESTONES:
        if key in line:
            return engine, name
    return None


# Fast paths for the current SGLang decode and prefill lines (most metric
# lines); any other shape falls through to the tolerant general parser below,
# which gives the same record for these shapes (tests/core/test_logparse.py checks).
_DECODE_FAST = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)(?: [A-Z]{2}\d+)*\] Decode batch[.,] "
    r"#running-req: (\d+), #token: \d+, token usage: (\d+(?:\.\d+)?), (?:cuda graph: \w+, )?"
    r"gen throughput \(token/s\): (\d+(?:\.\d+)?), #queue-req: (\d+)(?:, )?$"
)
_PREFILL_FAST = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)(?: [A-Z]{2}\d+)*\] Prefill batch[.,] "
    r"#new-seq: \d+, #new-token: \d+, #cached-token: \d+, #token: \d+, "
    r"token usage: (\d+(?:\.\d+)?), #running-req: (\d+), #queue-req: (\d+), "
    r"#pending-token: \d+, cuda graph: \w+, input throughput \(token/s\): (\d+(?:\.\d+)?)(?:, )?$"
)


def parse_line(line: str) -> Metric | Milestone | None:
    """The metric or milestone in one log line, or None."""
    fast = _DECODE_FAST.match(line)
    if fast is not None:
        ts, running, usage, gen, queued = fast.groups()
        return Metric(ts, "sglang", "decode", float(gen), None, int(running), int(queued),
                      float(usage))
    fast = _PREFILL_FAST.match(line)
    if fast is not None:
        ts, usage, running, queued, inp = fast.groups()
        return Metric(ts, "sglang", "prefill", None, float(inp), int(running), int(queued),
                      float(usage))
    return _parse_general(line)


# (line prefix, engine, metric parser for the message after the prefix)
_ENGINES: tuple[tuple[re.Pattern[str], Engine, Callable[[str, str], Metric | None]], ...] = (
    (_SGLANG, "sglang", _sglang_batch), (_VLLM, "vllm", _vllm_stats))


def _parse_general(line: str) -> Metric | Milestone | None:
    """Any line: an SGLang or vLLM metric, a startup milestone, or None."""
    metric_hint = "batch" in line or "throughput" in line
    if not metric_hint and not any(k in line for k in _MILESTONE_KEYS):
        return None
    line = line.rstrip("\r\n")
    for pattern, engine, metric_of in _ENGINES:
        m = pattern.match(line)
        if m is None:
            continue
        ts, msg = m.group("ts"), m.group("msg")
        if metric_hint:
            metric = metric_of(ts, msg)
            if metric is not None:
                return metric
        hit = _milestone(msg)
        return Milestone(ts, engine, hit[1], msg) if hit else None
    return None


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


def token_latency(gen_tps: float | None, running: int | None) -> tuple[float | None, str]:
    """Per-request ms per token and its label, batch-aware.

    ``gen_tps`` counts the tokens of every running request, so one request
    sees a token every ``1000 x running / gen_tps`` ms. Only at batch 1 is
    that the batch-1 latency (``ms/tok@bs1``); otherwise it is labelled with
    the batch it was measured at."""
    if not gen_tps:
        return None, "ms/tok"
    batch = running if running and running > 1 else 1
    label = "ms/tok@bs1" if batch == 1 else f"ms/tok/req@bs{batch}"
    return 1000.0 * batch / gen_tps, label
