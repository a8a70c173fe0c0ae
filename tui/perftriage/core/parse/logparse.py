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

:class:`LogMetrics` keeps the per-source time series; the reducer feeds it
from LogLines events, so replay gives the same numbers as the live run.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from perftriage.core.needles import Needles

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
# which gives the same record for these shapes (tests/test_logparse.py checks).
_DECODE_FAST = re.compile(
    r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)(?: [A-Z]{2}\d+)*\] Decode batch[.,] "
    r"#running-req: (\d+), #token: \d+, token usage: (\d+(?:\.\d+)?), (?:cuda graph: \w+, )?"
    r"gen throughput \(token/s\): (\d+(?:\.\d+)?), #queue-req: (\d+)(?:, )?$"
)
# The same shape for :func:`scan`, ~25 % cheaper (ASCII digit classes) and
# narrower: "cuda graph" only True/False, so a line it accepts can hold no
# error pattern (scan skips the error test for it). Lines it refuses go the
# general way and get the same record.
_DECODE_SCAN = re.compile(
    r"\[([0-9]{4}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9](?:\.[0-9]+)?)"
    r"(?: [A-Z]{2}[0-9]+)*\] Decode batch[.,] "
    r"#running-req: ([0-9]+), #token: [0-9]+, token usage: ([0-9]+(?:\.[0-9]+)?), "
    r"(?:cuda graph: (?:True|False), )?"
    r"gen throughput \(token/s\): ([0-9]+(?:\.[0-9]+)?), #queue-req: ([0-9]+)(?:, )?\Z"
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


# Every line that can be an error, fatal, a milestone or a vLLM stats line
# holds one of these (see FATAL_RE, ERROR_RE, MILESTONES and _vllm_stats); a
# line without any can only be an SGLang batch line ("batch"), or nothing.
RARE_NEEDLES: tuple[str, ...] = (
    "rror", "RROR", "xception", "Traceback", "of memory", "CRITICAL", "FATAL",
    "NCCL", "nccl", "atchdog", "KV ", "Load weight", "graph end", "Graph capturing",
    "Uvicorn", "fired up", "Model loading", "Starting vLLM", "Avg ",
)
_RARE = Needles("|".join(map(re.escape, RARE_NEEDLES)))


def _candidates(lines: list[str]) -> list[int]:
    """Offsets of the lines :func:`scan` must look at (a superset of what
    matters). A busy server's batch holds no rare needle at all: one RE2
    pass over the joined batch proves it (~0.1 us a line, where the per-line
    gate tests twenty substrings, ~0.4 us), and then only the lines holding
    "batch" can matter. A batch with a rare needle takes the per-line gate."""
    if _RARE.absent_from("\n".join(lines)):
        return [i for i, ln in enumerate(lines) if "batch" in ln]
    return _gate(lines)


def _gate(lines: list[str]) -> list[int]:
    """Offsets of the lines that could be a metric, a milestone, fatal or an
    error: a superset of :func:`_worth_a_look` and of :func:`is_error`'s gate,
    as one inline expression (no call per line; most lines fail every test)."""
    return [
        i for i, ln in enumerate(lines)
        if "batch" in ln or "rror" in ln or "RROR" in ln or "throughput" in ln
        or "of memory" in ln or "xception" in ln or "Traceback" in ln or "NCCL" in ln
        or "nccl" in ln or "atchdog" in ln or "pool is full" in ln or "CRITICAL" in ln
        or "FATAL" in ln or "Load weight" in ln or "KV " in ln or "raph" in ln
        or "Uvicorn" in ln or "fired up" in ln or "Model loading" in ln or "Starting vLLM" in ln
    ]


# (offset, record, fatal): record is parse_line's result, or the match
# groups of a fast decode line (see Scan)
ScanItem = tuple[int, tuple[str, ...] | Metric | Milestone | None, bool]


class Scan:
    """What one batch of lines holds, found in one pass (:func:`scan`).

    ``items``: (offset, record, fatal) for every line :func:`_worth_a_look`
    lets through — record is what :func:`parse_line` returns, except that a
    line of the SGLang fast decode shape is kept as its match groups (a tuple)
    so no Metric is built for points the bounded series drop anyway; fatal is
    whether a non-metric line matches FATAL_RE. ``errors``: offsets of the
    lines :func:`is_error` accepts.
    """

    __slots__ = ("errors", "items")

    def __init__(self, items: list[ScanItem], errors: list[int]) -> None:
        self.items = items
        self.errors = errors

    def matters(self) -> list[int]:
        """Offsets of metric, milestone and fatal lines (what a capped transcript keeps)."""
        return [i for i, rec, fatal in self.items if rec is not None or fatal]

    def metric_offsets(self) -> list[int]:
        """Offsets of the metric lines (a subset of :meth:`matters`)."""
        return [i for i, rec, _ in self.items if isinstance(rec, (tuple, Metric))]


_scan_memo: tuple[list[str], int, Scan] | None = None


def scan(lines: list[str]) -> Scan:
    """Metrics, milestones, fatal and error lines of a batch, per batch instead
    of per line: one inline gate over all lines, then the (few) candidates.

    The last result is memoised on the list itself (identity and length), so
    the log follower (which needs it for the transcript cap) and the reducer
    parse a batch once. Pure: the same lines always give the same Scan.
    """
    global _scan_memo
    memo = _scan_memo
    if memo is not None and memo[0] is lines and memo[1] == len(lines):
        return memo[2]
    items: list[ScanItem] = []
    errors: list[int] = []
    decode = _DECODE_SCAN.match
    fatal_search = FATAL_RE.search
    error_search = ERROR_RE.search
    for i in _candidates(lines):
        line = lines[i]
        fast = decode(line)
        if fast is not None:  # the bulk of a busy server's metric lines
            items.append((i, fast.groups(), False))
            continue
        if (
            "rror" in line or "RROR" in line or "xception" in line or "Traceback" in line
            or "of memory" in line or "CRITICAL" in line or "FATAL" in line
            or "atchdog" in line or "pool is full" in line or "NCCL" in line or "nccl" in line
        ) and error_search(line) is not None:
            errors.append(i)
        if not _worth_a_look(line):
            continue
        rec = parse_line(line)
        fatal = not isinstance(rec, Metric) and fatal_search(line) is not None
        items.append((i, rec, fatal))
    result = Scan(items, errors)
    _scan_memo = (lines, len(lines), result)
    return result


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


@dataclass
class LogMetrics:
    """Time series of one log source (built by the reducer, deterministic)."""

    maxlen: int = SERIES_POINTS
    engine: str | None = None
    gen_tps: deque[float] = field(default_factory=lambda: deque(maxlen=SERIES_POINTS))
    input_tps: deque[float] = field(default_factory=lambda: deque(maxlen=SERIES_POINTS))
    running: deque[int] = field(default_factory=lambda: deque(maxlen=SERIES_POINTS))
    queued: deque[int] = field(default_factory=lambda: deque(maxlen=SERIES_POINTS))
    token_usage: deque[float] = field(default_factory=lambda: deque(maxlen=SERIES_POINTS))
    last: Metric | None = None
    last_decode: Metric | None = None
    last_prefill: Metric | None = None
    count: int = 0
    milestones: list[Milestone] = field(default_factory=list)
    errors: int = 0  # fatal-pattern lines seen

    @property
    def ready(self) -> bool:
        return any(m.name == "ready" for m in self.milestones)

    @property
    def latest_gen_tps(self) -> float | None:
        return self.gen_tps[-1] if self.gen_tps else None

    @property
    def ms_per_token(self) -> float | None:
        return ms_per_token(self.latest_gen_tps)

    @property
    def latest_running(self) -> int | None:
        return self.running[-1] if self.running else None

    @property
    def token_latency(self) -> tuple[float | None, str]:
        """(per-request ms/token, label) at the latest decode line's batch size."""
        return token_latency(self.latest_gen_tps, self.latest_running)

    def feed(self, lines, first_line: int, found: Scan | None = None) -> bool:
        """Parse a batch; True when anything was recorded. ``found`` is
        ``scan(lines)`` when the caller has it."""
        if found is None:
            found = scan(lines if isinstance(lines, list) else list(lines))
        changed = False
        gen_tps, running, queued, usage = self.gen_tps, self.running, self.queued, self.token_usage
        last_fast = None  # (groups, line) of the latest fast-shape decode line
        fast_is_last = False
        for i, rec, fatal in found.items:
            if isinstance(rec, tuple):
                # SGLang decode line (fast shape): append straight to the series
                ts, run, use, gen, que = rec
                gen_tps.append(float(gen))
                running.append(int(run))
                queued.append(int(que))
                usage.append(float(use))
                self.count += 1
                last_fast = (rec, first_line + i)
                fast_is_last = True
                changed = True
                continue
            if fatal:
                self.errors += 1
                changed = True
            if rec is None:
                continue
            changed = True
            if isinstance(rec, Milestone):
                rec = Milestone(rec.ts, rec.engine, rec.name, rec.text, first_line + i)
                self.engine = self.engine or rec.engine
                if len(self.milestones) < 1000:
                    self.milestones.append(rec)
                continue
            rec = Metric(rec.ts, rec.engine, rec.kind, rec.gen_tps, rec.input_tps, rec.running,
                         rec.queued, rec.token_usage, first_line + i)
            if rec.kind != "prefill":
                last_fast = None  # a later decode/stats record is the last decode
            fast_is_last = False
            self.add(rec)
        if last_fast is not None:
            (ts, run, use, gen, que), n = last_fast
            m = Metric(ts, "sglang", "decode", float(gen), None, int(run), int(que), float(use), n)
            self.engine = "sglang"
            self.last_decode = m
            if fast_is_last:
                self.last = m
        return changed

    def add(self, m: Metric) -> None:
        self.engine = m.engine
        self.count += 1
        self.last = m
        if m.kind == "prefill":
            self.last_prefill = m
        else:
            self.last_decode = m
        if m.gen_tps is not None:
            self.gen_tps.append(m.gen_tps)
        if m.input_tps is not None:
            self.input_tps.append(m.input_tps)
        if m.running is not None and m.kind != "prefill":
            self.running.append(m.running)
        if m.queued is not None:
            self.queued.append(m.queued)
        if m.token_usage is not None:
            self.token_usage.append(m.token_usage)
