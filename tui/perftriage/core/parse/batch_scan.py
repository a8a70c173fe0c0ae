"""What a batch of log lines holds (metric, milestone, fatal and error
lines), found per batch instead of per line (pure, no Textual).

Two steps, so that the first can run in a helper process during a flood
(:mod:`perftriage.services.flood.scan_worker`) while the app thread only splits
lines and applies results:

- :func:`triage` does the bulk: one RE2 pass proves most batches hold no
  rare needle, one inline gate picks the candidate lines, and the SGLang
  decode lines of the common shape (most of a busy server's metric lines)
  are matched and their numbers read. What it returns is plain data
  (:class:`Triage`, msgpack-able) and depends only on the lines.
- :func:`finish` passes the few other candidates through the general
  parser (:func:`~perftriage.core.parse.logparse.parse_line`).

:func:`scan` is both steps, memoised on the list (the log follower needs a
batch's scan for the transcript cap, the reducer for the metrics: one
parse). :func:`remember` primes that memo with a scan finished from a
helper's triage. Either way the same lines give the same :class:`Scan`, so
a live session and its replay reduce to the same state.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from operator import itemgetter

import msgspec

from perftriage.core.needles import Needles
from perftriage.core.parse.logparse import (
    ERROR_RE,
    FATAL_RE,
    Metric,
    Milestone,
    _worth_a_look,
    BadNumber,
    parse_line_strict,
    prefill_metric,
)

# (the numbers above: at most logparse.MAX_DIGITS digits, so int() and float()
# take them; a longer run goes the general way, which keeps the line as text)

# Every line that can be an error, fatal, a milestone or a vLLM stats line
# holds one of these (see FATAL_RE, ERROR_RE, MILESTONES and _vllm_stats); a
# line without any can only be an SGLang batch line ("batch"), or nothing.
RARE_NEEDLES: tuple[str, ...] = (
    "rror", "RROR", "xception", "Traceback", "of memory", "CRITICAL", "FATAL",
    "NCCL", "nccl", "atchdog", "KV ", "Load weight", "graph end", "Graph capturing",
    "Uvicorn", "fired up", "Model loading", "Starting vLLM", "Avg ", "MFU: ", "SpecDecoding",
)
_RARE = Needles("|".join(map(re.escape, RARE_NEEDLES)))

# SGLang's decode line in its common shape (ASCII digit classes: ~25 %
# cheaper than \d) and narrower than the general parser: "cuda graph" only
# True/False, so a line it accepts can hold no error pattern (no error test
# for it). Lines it refuses go the general way and get the same record.
_DECODE_SCAN = re.compile(
    r"\[([0-9]{4}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9](?:\.[0-9]+)?)"
    r"(?: (?:TP|PP|EP|CP)[0-9]+)*\] Decode batch[.,] "
    r"#running-req: ([0-9]{1,15}), #token: [0-9]+, token usage: ([0-9]{1,15}(?:\.[0-9]{1,15})?), "
    r"(?:cuda graph: (?:True|False), )?"
    r"gen throughput \(token/s\): ([0-9]{1,15}(?:\.[0-9]{1,15})?), #queue-req: ([0-9]{1,15})(?:, )?\Z"
)
# The same for SGLang's prefill line (logparse._PREFILL_FAST, narrowed alike)
_PREFILL_SCAN = re.compile(
    r"\[([0-9]{4}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9](?:\.[0-9]+)?)"
    r"(?: (?:TP|PP|EP|CP)[0-9]+)*\] Prefill batch[.,] "
    r"#new-seq: [0-9]+, #new-token: ([0-9]{1,15}), #cached-token: ([0-9]{1,15}), (?:#token: [0-9]+, )?"
    r"token usage: ([0-9]{1,15}(?:\.[0-9]{1,15})?), #running-req: ([0-9]{1,15}), #queue-req: ([0-9]{1,15}), "
    r"#pending-token: [0-9]+, cuda graph: (?:True|False), "
    r"input throughput \(token/s\): ([0-9]{1,15}(?:\.[0-9]{1,15})?)(?:, )?\Z"
)


def _candidates(lines: list[str]) -> list[int]:
    """Offsets of the lines a scan must look at (a superset of what
    matters). A busy server's batch holds no rare needle at all: one RE2
    pass over the joined batch proves it (~0.2 us a line, where the per-line
    gate tests twenty substrings, ~0.6 us), and then only the lines holding
    "batch" can matter. A batch with a rare needle takes the per-line gate."""
    if _RARE.absent_from("\n".join(lines)):
        return [i for i, ln in enumerate(lines) if "batch" in ln]
    return _gate(lines)


def _gate(lines: list[str]) -> list[int]:
    """Offsets of the lines that could be a metric, a milestone, fatal or an
    error: a superset of ``_worth_a_look`` and of ``is_error``'s gate, as
    one inline expression (no call per line; most lines fail every test)."""
    return [
        i for i, ln in enumerate(lines)
        if "batch" in ln or "rror" in ln or "RROR" in ln or "throughput" in ln
        or "of memory" in ln or "xception" in ln or "Traceback" in ln or "NCCL" in ln
        or "nccl" in ln or "atchdog" in ln or "pool is full" in ln or "CRITICAL" in ln
        or "FATAL" in ln or "Load weight" in ln or "KV " in ln or "raph" in ln
        or "Uvicorn" in ln or "fired up" in ln or "Model loading" in ln or "Starting vLLM" in ln
        or "MFU: " in ln
    ]


# a prefill line of the common shape: (offset, ts, token usage, running, queued,
# input tok/s, #new-token, #cached-token)
PrefillRow = tuple[int, str, float, int, int, float, int, int]


class Triage(msgspec.Struct, array_like=True):
    """The first step of a scan, all ascending: the common-shape SGLang
    decode lines as columns (offset, timestamp and the four numbers the
    series keep), the common-shape prefill lines as rows, and the offsets of
    the other candidate lines."""

    fast: list[int] = []
    ts: list[str] = []
    running: list[int] = []
    usage: list[float] = []
    gen: list[float] = []
    queued: list[int] = []
    prefill: list[PrefillRow] = []
    other: list[int] = []

    def cut(self, start: int, stop: int) -> Triage:
        """The triage of ``lines[start:stop]`` (offsets rebased to ``start``)."""
        a, b = bisect_left(self.fast, start), bisect_left(self.fast, stop)
        c, d = bisect_left(self.other, start), bisect_left(self.other, stop)
        e, f = (bisect_left(self.prefill, at, key=itemgetter(0)) for at in (start, stop))
        return Triage([i - start for i in self.fast[a:b]], self.ts[a:b], self.running[a:b],
                      self.usage[a:b], self.gen[a:b], self.queued[a:b],
                      [(row[0] - start, *row[1:]) for row in self.prefill[e:f]],
                      [i - start for i in self.other[c:d]])


def triage(lines: list[str]) -> Triage:
    """The first step of :func:`scan` (see the module doc)."""
    tri = Triage()
    decode = _DECODE_SCAN.match
    prefill_match = _PREFILL_SCAN.match
    for i in _candidates(lines):
        m = decode(lines[i])
        if m is not None:
            t, run, use, g, que = m.groups()
            tri.fast.append(i)
            tri.ts.append(t)
            tri.running.append(int(run))
            tri.usage.append(float(use))
            tri.gen.append(float(g))
            tri.queued.append(int(que))
            continue
        p = prefill_match(lines[i])
        if p is None:
            tri.other.append(i)
        else:
            t, new, cached, use, run, que, inp = p.groups()
            tri.prefill.append((i, t, float(use), int(run), int(que), float(inp), int(new),
                                int(cached)))
    return tri


# (offset, record, fatal) of a candidate line that is not a fast decode line
ScanItem = tuple[int, Metric | Milestone | None, bool]


class Scan:
    """What one batch of lines holds.

    ``fast``: the common-shape decode and prefill lines (:class:`Triage`;
    no error, fatal or rare needle fits those shapes).
    ``items``: (offset, record, fatal) for every other candidate line that
    ``_worth_a_look`` lets through -- record is what ``parse_line``
    returns, fatal whether a non-metric line matches FATAL_RE. ``errors``:
    offsets of the lines ``is_error`` accepts. ``unparsed``: offsets of the
    lines that looked like a metric but hold a number past the bounds
    (kept as text, counted). All ascending.
    """

    __slots__ = ("errors", "fast", "items", "unparsed")

    def __init__(self, fast: Triage, items: list[ScanItem], errors: list[int],
                 unparsed: list[int] | None = None) -> None:
        self.fast = fast
        self.items = items
        self.errors = errors
        self.unparsed = unparsed or []

    def matters(self) -> list[int]:
        """Offsets of metric, milestone and fatal lines (what a capped transcript keeps)."""
        return self._with_common([i for i, rec, fatal in self.items if rec is not None or fatal])

    def metric_offsets(self) -> list[int]:
        """Offsets of the metric lines (a subset of :meth:`matters`)."""
        return self._with_common([i for i, rec, _ in self.items if isinstance(rec, Metric)])

    def _with_common(self, offsets: list[int]) -> list[int]:
        """``offsets`` and those of the common-shape (metric) lines, ascending."""
        return sorted(self.fast.fast + [row[0] for row in self.fast.prefill] + offsets)

    def records(self) -> list[ScanItem]:
        """``items`` with the prefill rows among them as records, in line order."""
        if not self.fast.prefill:
            return self.items
        rows: list[ScanItem] = [
            (i, prefill_metric(t, use, run, que, inp, new, cached), False)
            for i, t, use, run, que, inp, new, cached in self.fast.prefill]
        return sorted(self.items + rows, key=itemgetter(0))


def finish(lines: list[str], tri: Triage) -> Scan:
    """The second step of :func:`scan`: ``tri``'s other candidates through
    the error test and the general parser."""
    items: list[ScanItem] = []
    errors: list[int] = []
    unparsed: list[int] = []
    fatal_search = FATAL_RE.search
    error_search = ERROR_RE.search
    for i in tri.other:
        line = lines[i]
        if (
            "rror" in line or "RROR" in line or "xception" in line or "Traceback" in line
            or "of memory" in line or "CRITICAL" in line or "FATAL" in line
            or "atchdog" in line or "NCCL" in line or "nccl" in line
        ) and error_search(line) is not None:
            errors.append(i)
        if not _worth_a_look(line):
            continue
        try:
            rec = parse_line_strict(line)
        except (BadNumber, ValueError, ArithmeticError):  # a parse that fails keeps the
            rec = None                                     # line as text, counted: never
            unparsed.append(i)                             # the source's end
        fatal = not isinstance(rec, Metric) and fatal_search(line) is not None
        items.append((i, rec, fatal))
    return Scan(tri, items, errors, unparsed)


def scan(lines: list[str]) -> Scan:
    """Metrics, milestones, fatal and error lines of a batch: :func:`triage`
    then :func:`finish`. Pure: the same lines always give the same Scan.
    (Live, a batch's scan travels on its event: ``LogLines.scan``.)"""
    return finish(lines, triage(lines))
