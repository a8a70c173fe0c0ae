"""The live state against the baseline (``b``), as the Gap, Engine and
Profile views show it: one short phrase per metric with its verdict, the
same verdicts as ``perftriage compare`` (the comparison's JSON in,
(text, verdict) pairs out; the widgets colour the verdicts)."""

from __future__ import annotations

from typing import Any

from perftriage.core.compare.compare import fmt, with_unit
from perftriage.core.compare.numbers import pair_texts
from perftriage.core.compare.profile_diff import Figure, ProfileDiff
from perftriage.core.clock import clock
from perftriage.core.profile.table import short_name
from perftriage.core.sanitize import visible

GAP_METRICS = ("gap", "traffic_ratio", "dram_gbs", "useful_gbs", "idle_pct", "decode_tps",
               "sm_active_pct", "power_w")
ENGINE_METRICS = ("engine_gen_tps", "decode_tps", "ms_per_token", "itl_p50", "itl_p90",
                  "itl_p99", "ttft_p50", "engine_running", "engine_queued")
MARK = {"improved": "▲", "regressed": "▼", "no change": "=", "not enough data": "?",
        "changed": "≠"}
# verdict -> the hypothesis status whose colour it borrows (the themes' palette)
STATUS = {"improved": "supported", "regressed": "refuted", "no change": "open",
          "not enough data": "parked", "changed": "open"}


def heading(result: dict[str, Any] | None, marked: Any, live: bool = True) -> str:
    """``last 30 s vs baseline 0:05–0:33`` or why there is nothing to show
    (``live`` False: a recording shown, the baseline as it was marked)."""
    if marked is None:
        return "no baseline: b marks one (now, a run, a range)"
    span = f"{clock(marked.start)}–{clock(marked.end)}"
    label = visible(marked.label) if marked.label and marked.label != span else ""
    name = f"baseline {label + ' ' if label else ''}{span}"
    if not live:
        return f"{name} marked at {clock(marked.t)} (the live comparison runs in the cockpit)"
    if result is None:
        return f"{name}: no readings to compare yet"
    return f"last 30 s vs {name}"


def metric_phrases(result: dict[str, Any] | None, metrics: tuple[str, ...],
                   host: str | None = None) -> list[tuple[str, str]]:
    """``(decode throughput 13.6 → 109 tok/s ▲ improved, improved)`` for each
    of ``metrics`` the comparison has (of ``host`` first, host rows only)."""
    if result is None:
        return []
    rows = [r for r in result["metrics"] if r["gpu"] is None and r["metric"] in metrics]
    rows.sort(key=lambda r: (metrics.index(r["metric"]), host is not None and r["host"] != host))
    out, seen = [], set()
    for r in rows:
        if r["metric"] in seen:
            continue  # one host per metric: the view's own host first
        seen.add(r["metric"])
        name = r["name"].split(" · ")[0]
        text = (f"{name} {fmt(r['a']['median'])} → {with_unit(r['b']['median'], r['unit'])} "
                f"{MARK[r['verdict']]} {r['verdict']}")
        if r["verdict"] == "not enough data":
            text += f" ({r['a']['n']}/{r['b']['n']} s)"
        out.append((visible(text), r["verdict"]))
    return out


def _figure(name: str, f: Figure, unit: str) -> tuple[str, str]:
    how = f", {f.speedup_text()}" if unit == "ms" else ""
    ratio = "" if f.ratio is None else f" ({f.ratio:.2f}×{how})"
    ta, tb = pair_texts(f.a, f.b)
    return (f"{name} {ta} → {tb} {unit}{ratio} {MARK.get(f.verdict, '')} "
            f"{f.verdict}", f.verdict)


def profile_lines(d: ProfileDiff, buckets: int = 6, kernels: int = 6) -> list[tuple[str, str]]:
    """Step time and kernel time per step with their ratio first, then GPU idle,
    a warning where the captures' rank counts differ, then the buckets and the
    kernels that moved (ms per step; "warning" lines have no verdict)."""
    per = d.per
    out = [_figure("step time", d.step_ms, "ms"),
           _figure(f"kernel time per {per}", d.kernel_ms, "ms"),
           _figure("GPU idle", d.idle_pct, "%")]
    out = [line for line, f in zip(out, (d.step_ms, d.kernel_ms, d.idle_pct))
           if f.a is not None and f.b is not None]
    out += [(f"⚠ {visible(w)}", "warning") for w in d.warnings()]
    out.append((f"buckets (ms per {per})", "heading"))
    out += [_figure(f"  {visible(b.name)}", b, "ms") for b in d.buckets[:buckets]]
    # kernels that moved beyond the noise floor (a 1 µs kernel's 10 % is noise)
    moved = [k for k in d.kernels if k.verdict != "no change"]
    out.append((f"kernels that moved ({len(moved)})", "heading"))
    for k in moved[:kernels]:
        out.append(_figure(f"  {short_name(k.name, 40)} [{k.change}]", k, "ms"))
    return out
