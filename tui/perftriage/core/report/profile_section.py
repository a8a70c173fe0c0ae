"""The report's "Profiles" section: each capture's headline, buckets and top
kernels, and what changed between consecutive captures. A capture that says
what the last one shown says, within noise (``within_noise`` of
core/compare/profile_diff.py), is one line: ``prof2 = prof1 within noise``."""

from __future__ import annotations

from perftriage.core.compare.numbers import pair_texts
from perftriage.core.compare.profile_diff import SAME_SHARE_PTS, SAME_TIME_PCT, diff, within_noise
from perftriage.core.model.state import SessionState
from perftriage.core.profile.compare import compare
from perftriage.core.profile.table import gaps_line, idle_line, short_name, short_names
from perftriage.core.report.md_text import cell, code, code_cell, inline
from perftriage.core.model.events import ProfileCaptured
from perftriage.core.profile.model import KernelRow
from perftriage.core.view.profile_view import figure_text, headline

TOP = 10


def _per_step_lines(prev: ProfileCaptured, cap: ProfileCaptured) -> list[str]:
    """What leads a comparison of two captures: step time, GPU idle, kernel
    time per step, then the buckets that moved (ms per step)."""
    d = diff(prev, cap)
    lead = []
    for name, f, unit in (("step", d.step_ms, " ms"), ("GPU idle", d.idle_pct, " %"),
                          (f"kernel time per {d.per}", d.kernel_ms, " ms")):
        if f.a is not None and f.b is not None:
            how = f" ({f.speedup_text()})" if unit == " ms" else ""
            ta, tb = pair_texts(f.a, f.b)
            lead.append(f"{name} {ta} → {tb}{unit}{how}")
    out = [f"- {'; '.join(lead)}"] if lead else []
    moved = [f for f in d.buckets if f.verdict != "no change"]
    if moved:
        out.append(f"- buckets per {d.per}: " + "; ".join(
            "{} {} → {} ms ({})".format(inline(f.name), *pair_texts(f.a, f.b), f.speedup_text())
            for f in moved[:5]))
    out += [f"- ⚠ {inline(w)}" for w in d.warnings()]
    return out


def _launched_by(k: KernelRow) -> str:
    """The biggest launcher, in a table cell: ``aten::mm`` (its share when
    others launched some calls too), a graph replay, or n/a."""
    if not k.launched_by:
        return "n/a"
    top = k.launched_by[0]
    text = (code_cell(top.op) if top.op is not None else
            "graph replay" if top.call is not None and "Graph" in top.call else
            cell(top.call) if top.call is not None else "not in the trace")
    return text if top.calls == k.calls else f"{text} ({top.calls} of {k.calls})"


def same_line(shown: ProfileCaptured, cap: ProfileCaptured) -> str:
    """``prof2 = prof1 within noise (GPU idle 85.2 → 84.6 %, step 3.91 → 3.75
    ms; …)``: a capture not shown again, with the figures that moved least."""
    d = diff(shown, cap)
    where = "" if cap.host == shown.host else f" on {cap.host} ({shown.capture_id} on {shown.host})"
    moved = []
    for name, f, unit in (("GPU idle", d.idle_pct, " %"), ("step", d.step_ms, " ms")):
        if f.a is not None and f.b is not None:
            ta, tb = pair_texts(f.a, f.b)
            moved.append(f"{name} {ta} → {tb}{unit}")
    return (f"{cap.capture_id} = {shown.capture_id} within noise{where} ("
            + "".join(f"{m}, " for m in moved)
            + f"each top kernel's share within {SAME_SHARE_PTS:g} points and its time "
            f"within {SAME_TIME_PCT:g} %): not shown again")


def profile_section(state: SessionState) -> list[str]:
    if not state.profiles:
        return []
    out = ["## Profiles", ""]
    prev = None
    shown = None  # the last capture shown whole
    for cap in state.profiles:
        s = cap.summary
        out += [f"### {inline(cap.capture_id)}", ""]
        if shown is not None and within_noise(shown, cap):
            out += [inline(same_line(shown, cap)), ""]
            prev = cap
            continue
        shown = cap
        out += [inline(headline(cap)), ""]
        if (why := idle_line(s)) is not None:
            out += [inline(why), ""]
        if (gaps := gaps_line(s)) is not None:
            out += [inline(gaps), ""]
            out += _long_gaps(s)
        out.append("Buckets: " + ", ".join(f"{inline(b.bucket)} {b.pct:.1f} %" for b in s.buckets))
        out += ["", "| kernel | bucket | total ms | calls | avg µs | p50 / p99 µs | share "
                    "| launched by |",
                "|---|---|---:|---:|---:|---:|---:|---|"]
        for k, name in zip(s.kernels[:TOP], short_names([k.name for k in s.kernels[:TOP]], 80)):
            out.append(f"| {code_cell(name)} | {cell(k.bucket)} | {k.total_ms:.3f} "
                       f"| {k.calls} | {k.avg_us:.1f} | {figure_text(k.p50_us, '.1f')} / "
                       f"{figure_text(k.p99_us, '.1f')} | {k.pct:.1f} % | {_launched_by(k)} |")
        if prev is not None:
            c = compare(prev.summary, s)
            out += ["", f"Against {inline(prev.capture_id)}:", *_per_step_lines(prev, cap)]
            for label, items, fmt in (
                ("appeared", c.appeared, lambda x: f"{x.after_pct:.1f} %"),
                ("vanished", c.vanished, lambda x: f"was {x.before_pct:.1f} %"),
                ("changed", c.changed, lambda x: f"{x.before_pct:.1f} → {x.after_pct:.1f} %"),
            ):
                if items:
                    out.append(f"- {label}: " + "; ".join(
                        f"{code(short_name(x.name, 60))} {fmt(x)}" for x in items[:5]))
        out.append("")
        prev = cap
    return out


def _long_gaps(s) -> list[str]:
    """The longest idle gaps with the CPU op spanning each."""
    if not s.long_gaps:
        return []
    out = ["| rank | at ms | gap ms | host | CPU op spanning it |", "|---|---:|---:|---|---|"]
    for g in s.long_gaps[:LONG_GAPS_SHOWN]:
        out.append(f"| {cell(g.rank)} | {g.start:.2f} | {g.dur_ms:.2f} | "
                   f"{'late' if g.host_wait else 'queued'} | "
                   f"{code_cell(g.op) if g.op else '(none: stacks would say)'} |")
    return out + [""]


LONG_GAPS_SHOWN = 5
