"""What kind of line a server log line is, without Textual: notable (ready,
OOM, NCCL, a traceback, an error, a kernel fallback, a warning) or a decode
line with its throughput, and what stays the same when a line repeats. The
evidence picker, the gap form and the report's log section
(core/report/log_scan.py) read lines through these."""

from __future__ import annotations

import re
from collections.abc import Iterable

from perftriage.core.parse import logparse

# what differs between repeats of one line: its time, rank tags, pids
_VARIES = re.compile(r"(?:\d{4}-)?\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?"
                     r"|\b(?:TP|DP|EP|PP|CP)\d+\b|\bpid=\d+")
_EMPTY_BRACKETS = re.compile(r"\[\s*\]|\(\s*\)")
# a message whose figures change every time it repeats: folded on its words
_FIGURES_AFTER = re.compile(re.escape(logparse.KV_RETRACT) + r".*")


def repeat_key(line: str) -> str:
    """What a line says, without what changes when it repeats."""
    line = _FIGURES_AFTER.sub(logparse.KV_RETRACT, line)
    return " ".join(_EMPTY_BRACKETS.sub("", _VARIES.sub("", line)).split())


NOTABLE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("oom", re.compile(r"out of memory|OutOfMemoryError|\bOOM\b", re.I)),
    ("nccl", re.compile(r"NCCL (?:error|WARN)|ncclInternalError|ncclSystemError|NCCL timeout", re.I)),
    ("traceback", re.compile(r"Traceback \(most recent call last\)")),
    ("error", re.compile(r"\b(?:ERROR|FATAL|CRITICAL)\b|RuntimeError|CUDA error|Killed\b")),
    # a kernel path given up for a slower one ("... falling back to triton",
    # "FlashInfer is not available for sm120"): a finding whatever its level
    ("fallback", re.compile(r"\bfall(?:ing|s)? ?back\b|\bfallback\b"
                            r"|not (?:available|supported) (?:for|on) sm_?\d+", re.I)),
    ("warning", re.compile(r"\bWARN(?:ING)?\b|" + re.escape(logparse.KV_RETRACT))),
)
# the kinds that are findings (what went wrong or degraded), most severe first
FINDING_KINDS = ("oom", "nccl", "traceback", "error", "fallback", "warning")


def classify_log_line(line: str) -> str | None:
    """``ready`` / ``oom`` / ``nccl`` / ``traceback`` / ``error`` or None.
    Ready and error detection follow the log parser (``perftriage.core.parse.logparse``);
    the finer kind of error comes from :data:`NOTABLE_PATTERNS`."""
    rec = logparse.parse_line(line) if ("fired up" in line or "Starting vLLM" in line) else None
    if isinstance(rec, logparse.Milestone) and rec.name == "ready":
        return "ready"
    for kind, pattern in NOTABLE_PATTERNS:
        if pattern.search(line):
            return kind
    if logparse.is_error(line):
        return "error"
    return None


def decode_record(line: str, strict: bool = False) -> logparse.Metric | None:
    """The decode (or vLLM stats) record of one line with a generation rate,
    else None (``strict``: :class:`logparse.BadNumber` for a number past the bounds)."""
    rec = logparse.parse_line_strict(line) if strict else logparse.parse_line(line)
    if not isinstance(rec, logparse.Metric) or rec.kind not in ("decode", "stats") \
            or rec.gen_tps is None:
        return None
    return rec


def decode_throughput(line: str) -> tuple[int, float] | None:
    """(running requests, generation tok/s) of one SGLang decode or vLLM
    stats line (parsed by ``perftriage.core.parse.logparse``), else None."""
    rec = decode_record(line)
    if rec is None:
        return None
    return (rec.running if rec.running is not None else 0), rec.gen_tps or 0.0


def batch1_ms_per_token(lines: Iterable[str]) -> float | None:
    """ms/token at batch 1 from the newest batch-1 decode line (1000 / tok/s)."""
    latest = None
    for line in lines:
        got = decode_throughput(line)
        if got and got[0] == 1 and got[1] > 0:
            latest = got[1]
    return None if latest is None else 1000.0 / latest
