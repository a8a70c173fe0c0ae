"""Plain-text rendering of a :class:`ProfileSummary` (the ``trace`` and
``profile`` commands' default output). Kernel names come from a trace, which
is remote text: they pass through the sanitizer before reaching a terminal."""

from __future__ import annotations

import re

from perftriage.core.profile.model import KernelRow, LaunchOp, ProfileSummary
from perftriage.core.sanitize import visible


def _opt(v: float | None, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


MIN_TAIL = 12  # characters of a template's end kept after the function's name


def short_name(name: str, width: int = 60) -> str:
    """A kernel name for a table cell: sanitised, ``void `` and the trailing
    parameter list dropped, then cut to ``width`` keeping what tells kernels
    apart: the innermost template's name (``MoeFCGemm`` inside
    ``cutlass::device_kernel<…>``), else the function's name, and the
    template's end (two ``elementwise_kernel<…>`` rows must not read alike).
    The one helper for a kernel name wherever one is cut (the Profile view,
    the triage's top kernels, ncu's lines)."""
    text = visible(name)
    if text.startswith("void "):
        text = text[5:]
    if len(text) > width:
        text = _without_parameters(text).replace("(anonymous namespace)", "(anon)")
    if len(text) <= width:
        return text
    kept = _keeping_names(text, width)
    if kept is not None:
        return kept
    head = max(1, int(width * 0.45))
    tail = width - head - 1
    return text[:head] + "…" + (text[-tail:] if tail > 0 else "")


_TEMPLATE = re.compile(r"[A-Za-z_]\w*(?=<)")


def _innermost(text: str) -> tuple[int, str] | None:
    """Where the innermost template's name starts and the name (the first
    of the deepest), or None when no template nests in another."""
    best: tuple[int, int, str] | None = None
    for m in _TEMPLATE.finditer(text):
        depth = text.count("<", 0, m.start()) - text.count(">", 0, m.start())
        if depth >= 1 and (best is None or depth > best[0]):
            best = (depth, m.start(), m.group())
    return None if best is None else (best[1], best[2])


def _keeping_names(text: str, width: int) -> str | None:
    """``text`` cut to ``width`` with the function's name and the innermost
    template's name whole, qualified while there is room; None when even the
    name does not fit."""
    lt = text.find("<")
    if lt <= 0:
        return None
    outer = text[:lt + 1]
    heads = [outer] if "::" not in outer else [outer, outer.rsplit("::", 1)[1]]
    inner = _innermost(text)
    if inner is not None:
        pos, key = inner
        rest, after = text[pos:], text[pos + len(key) + 1:]
        for head in heads:
            if len(head) + 1 + len(rest) <= width:
                return head + "…" + rest
        for head in heads:
            room = width - len(head) - 1 - len(key) - 2
            if room >= 2:
                return head + "…" + key + "<…" + after[-room:]
        room = width - len(key) - 2
        return key + "<…" + after[-room:] if room >= 2 else None
    for least in (MIN_TAIL, 2):  # the template's end, shorter before the name goes
        for head in heads:
            room = width - len(head) - 1
            if room >= min(least, len(text) - len(head)):
                return head + "…" + text[-room:]
    own = heads[-1][:-1]  # the function's own name, its middle cut where it must be
    if len(own) <= width:
        return own
    keep = max(1, int(width * 0.6))
    return own[:keep] + "…" + own[-(width - keep - 1):] if width - keep - 1 > 0 else None


def short_names(names: list[str], width: int = 60) -> list[str]:
    """:func:`short_name` of each, but two names that would read alike show,
    after the function's name, where they differ."""
    out = [short_name(n, width) for n in names]
    seen: dict[str, list[int]] = {}
    for i, text in enumerate(out):
        seen.setdefault(text, []).append(i)
    for rows in seen.values():
        if len(rows) < 2:
            continue
        full = [_cleaned(names[i]) for i in rows]
        for i, text in zip(rows, full):
            differs = min(_common_prefix(text, other) for other in full if other is not text)
            out[i] = _around(text, differs, width)
    return out


def _cleaned(name: str) -> str:
    text = visible(name)
    text = text[5:] if text.startswith("void ") else text
    return _without_parameters(text).replace("(anonymous namespace)", "(anon)")


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _around(text: str, at: int, width: int) -> str:
    """The function's name, then the text from a little before ``at``."""
    lt = text.find("<")
    head = text[:lt + 1] if 0 < lt < width // 2 else text[:width // 3]
    start = max(len(head), at - 8)
    room = width - len(head) - 2
    piece = text[start:start + room]
    return head + "…" + piece + ("…" if start + room < len(text) else "")


def _without_parameters(text: str) -> str:
    """``f<T>(int, float)`` -> ``f<T>``: the balanced ``(...)`` that ends a
    templated name (the function's parameters), if there is one."""
    if not text.endswith(")"):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if depth == 0:
            return text[:i] if i > 0 and text[i - 1] == ">" else text
    return text


def idle_line(s: ProfileSummary) -> str | None:
    """Why the GPU idled, in one line: ``idle between kernels 16.634 ms: host
    wait 99.6 %, kernel wait 0.4 %, other 0.0 % · launch delay p50 1.5 µs,
    p99 78.8 µs, 181 of 225 kernels shorter than their launch``; None
    without either figure."""
    parts = []
    b = s.idle_breakdown
    if b is not None:
        parts.append(f"idle between kernels {b.idle_ms:.3f} ms: host wait {b.host_wait_pct:.1f} %, "
                     f"kernel wait {b.kernel_wait_pct:.1f} %, other {b.other_pct:.1f} %")
    n = s.launch
    if n is not None:
        parts.append(f"launch delay p50 {n.delay_us_p50:.1f} µs, p99 {n.delay_us_p99:.1f} µs, "
                     f"{n.short_kernels} of {n.launches} kernels shorter than their launch")
    return " · ".join(parts) or None


def gaps_line(s: ProfileSummary) -> str | None:
    """The device idle by gap length and the longest gap, in one line:
    ``idle by gap length: <100us 0.17 ms (1 %) · 1-10ms 20.75 ms (99 %) ·
    3 gaps of 1 ms or more, the longest 6.98 ms at 21.35 ms (TP-0), host late,
    no CPU op spans it``; None without a split (nsys, older captures)."""
    if not s.idle_by_gap_length or not any(g.gaps for g in s.idle_by_gap_length):
        return None
    parts = [f"{g.range} {g.idle_ms:.2f} ms ({g.pct:.0f} %)" for g in s.idle_by_gap_length
             if g.gaps]
    text = "idle by gap length: " + " · ".join(parts)
    longs = sum(g.gaps for g in s.idle_by_gap_length if g.range in ("1-10ms", ">10ms"))
    if s.long_gaps:
        g = s.long_gaps[0]
        rank = f" ({visible(g.rank)})" if g.rank and s.ranks > 1 else ""
        who = f"spanned by `{visible(g.op[:80])}`" if g.op else "no CPU op spans it"
        text += (f" · {longs} gap(s) of 1 ms or more, the longest {g.dur_ms:.2f} ms at "
                 f"{g.start:.2f} ms{rank}, {'host late' if g.host_wait else 'kernels queued'}, "
                 f"{who}")
    return text


def per_rank(s: ProfileSummary, steps: int | None = None) -> str:
    """Kernel time and window per rank (the summary's figures are summed over
    ranks: two ~19 ms ranks read as a 38 ms window), and per step when the
    step count is known."""
    n = max(1, s.ranks)
    window = None if s.window_ms is None else s.window_ms / n
    text = (f"kernel {s.kernel_ms / n:.3f} ms in a window of {_opt(window, '.3f')} ms"
            + (f" per rank (mean of {n})" if n > 1 else ""))
    if steps:
        text += (f"; per step {s.kernel_ms / n / steps:.3f} ms of kernels in "
                 f"{_opt(None if window is None else window / steps, '.3f')} ms")
    return text


NO_TIMELINE = ("nsys's kernel summary has no timeline: no capture window, GPU idle or "
               "exposed communication (a Kineto trace gives them)")


def timeline_part(s: ProfileSummary, steps: int | None = None) -> str:
    """Window, GPU idle and exposed communication; an nsys summary (no
    timeline) gives only its kernel time, never ``-`` placeholders."""
    if s.window_ms is None:
        n = max(1, s.ranks)
        text = f"kernel {s.kernel_ms / n:.3f} ms" + (f" per rank (mean of {n})" if n > 1 else "")
        return text + (f"; per step {s.kernel_ms / n / steps:.3f} ms" if steps else "")
    return (f"{per_rank(s, steps)}, GPU idle {_opt(s.idle_pct, '.1f')} %, exposed communication "
            f"{_opt(s.exposed_comm_ms, '.3f')} ms")


def render(s: ProfileSummary, top: int | None = 20, steps: int | None = None) -> str:
    lines = [
        f"{s.ranks} rank(s), {len(s.kernels)} kernels ({s.source}): {timeline_part(s, steps)}",
        *([NO_TIMELINE] if s.window_ms is None else []),
        *([line] if (line := idle_line(s)) else []),
        *([line] if (line := gaps_line(s)) else []),
        *([f"warm-up: {visible(s.warmup)}"] if s.warmup else []),
        "",
        "buckets: " + "  ".join(f"{b.bucket} {b.pct:.1f}%" for b in s.buckets),
        "",
    ]
    spread = s.ranks > 1
    head = f"{'total ms':>10} {'calls':>7} {'avg us':>9} {'%':>6} {'bucket':<16}"
    lines.append(head + (f" {'spread%':>7}" if spread else "") + "  kernel")
    shown = s.kernels if top is None else s.kernels[:top]
    for k, name in zip(shown, short_names([k.name for k in shown])):
        row = f"{k.total_ms:>10.3f} {k.calls:>7} {k.avg_us:>9.2f} {k.pct:>6.1f} {visible(k.bucket):<16}"
        lines.append(row + (f" {k.spread_pct:>7.1f}" if spread else "") + "  " + name)
    if len(shown) < len(s.kernels):
        lines.append(f"… {len(s.kernels) - len(shown)} more (--top N)")
    return "\n".join(lines)


def kernel_detail(s: ProfileSummary, k: KernelRow, rule: str) -> str:
    """Everything the summary holds of one kernel: its whole name, bucket and
    the rule that chose it, calls, mean, one call's p50/p99, the CPU ops that
    launched it, share, per-rank totals and spread."""
    lines = [visible(k.name), "",
             f"bucket   {visible(k.bucket)}  ({visible(rule)})",
             f"total    {k.total_ms:.3f} ms over {k.calls} calls, mean {k.avg_us:.2f} µs, "
             f"{k.pct:.1f} % of kernel time",
             *_per_call(s, k)]
    if len(k.rank_ms) > 1:
        lines.append(f"spread   {k.spread_pct:.1f} % between the fastest and slowest rank")
        lines += [f"  {visible(label):<12} {ms:.3f} ms"
                  for label, ms in zip(s.rank_labels, k.rank_ms, strict=False)]
    return "\n".join(lines)


def _per_call(s: ProfileSummary, k: KernelRow) -> list[str]:
    if k.p50_us is None or k.p99_us is None:
        why = ("an nsys kernel summary has no per-call times or launches" if s.source == "nsys"
               else "not in this recording (captured before perftriage kept per-call times)")
        return [f"per call n/a: {why}"]
    ranks = " on all ranks" if s.ranks > 1 else ""
    lines = [f"per call p50 {k.p50_us:.2f} µs, p99 {k.p99_us:.2f} µs (of {k.calls} calls{ranks})"]
    for i, who in enumerate(k.launched_by):
        head = "launched" if i == 0 else "        "
        lines.append(f"{head} {launcher_text(who)} ({who.calls} of {k.calls} calls)")
    unlisted = k.calls - sum(who.calls for who in k.launched_by)
    if k.launched_by and unlisted > 0:
        lines.append(f"         … {unlisted} calls by other launchers")
    return lines


def launcher_text(who: LaunchOp) -> str:
    """``by aten::mm via cudaLaunchKernel``; a graph replay or a launch the
    trace lost said so."""
    if who.op is not None:
        return f"by {visible(who.op)}" + (f" via {visible(who.call)}" if who.call else "")
    if who.call is None:
        return "by a call not in the trace (the profiler dropped it)"
    if "Graph" in who.call:
        return (f"by a CUDA graph replay ({visible(who.call)}; the ops that recorded the graph "
                "are not in this trace)")
    return f"by {visible(who.call)}, outside any CPU op the trace records"
