"""Compare two slices: per-metric verdicts, comparability warnings, the
profile per step, what else changed, one summary line. :func:`compare`
returns the documented JSON shape (docs/compare.md)::

    {a: {label, from, to, hosts}, b: {…}, comparable, warnings: [...], summary,
     metrics: [{name, unit, better, a: {median, p10, p90, n}, b: {…}, ratio,
                change_pct, p_value, verdict, host, gpu, metric}],
     profile: {step_ms: {a, b, ratio, verdict}, idle_pct: {…}, buckets: [...],
               kernels: [...]} | null,
     changes: {args: [...], versions: [...], hypotheses: [...], server_info: [...]}}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from perftriage.core.compare import changepoints
from perftriage.core.compare.changes import changes as what_changed
from perftriage.core.compare.numbers import fmt, pair_texts, with_unit  # noqa: F401  (re-exported)
from perftriage.core.compare.profile_diff import ProfileDiff, diff
from perftriage.core.compare.recording import METRICS, MetricDef, Recording
from perftriage.core.clock import clock
from perftriage.core.compare.slices import Window
from perftriage.core.compare.stats import (
    MIN_EFFECT_PCT,
    MIN_READINGS,
    Judgement,
    effect_pct,
    judge,
    p_text,
    summarize,
)
from perftriage.core.model import events as ev
from perftriage.core.sanitize import visible

LOAD_DIFF_PCT = 20.0  # running requests, batch or context differing more: not comparable
HEADLINE = ("decode_tps", "engine_gen_tps", "ms_per_token", "gap")
PHASE_METRICS = ("decode_tps", "engine_gen_tps", "gap")


@dataclass(frozen=True)
class Side:
    rec: Recording
    window: Window


def _host_label(a: str, b: str) -> str:
    return a if a == b else f"{a} → {b}"


def _pairs(metric: str, a: Side, b: Side) -> list[tuple[str, str]]:
    """(host in A, host in B) with readings of ``metric`` in both slices: the same
    host, else the only host of each side (two runs on two machines)."""
    def hosts(side: Side) -> list[str]:
        return [h for (m, h, g) in side.rec.series if m == metric and g == -1
                and side.rec.has_readings(metric, h, side.window.start, side.window.end)]
    ha, hb = hosts(a), hosts(b)
    same = [(h, h) for h in ha if h in hb]
    if same:
        return same
    if len(ha) == 1 and len(hb) == 1:
        return [(ha[0], hb[0])]
    return []


def _row(m: MetricDef, host: str, gpu: int | None, j: Judgement) -> dict[str, Any]:
    name = m.label + (f" · {host}" if host else "") + (f" GPU {gpu}" if gpu is not None else "")
    return {"name": name, "unit": m.unit, "better": m.better, "a": j.a.to_json(),
            "b": j.b.to_json(), "ratio": j.ratio, "change_pct": j.change_pct,
            "p_value": j.p_value, "verdict": j.verdict, "metric": m.id,
            "host": host, "gpu": gpu}


def _metric_rows(a: Side, b: Side, min_effect: float) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for m in METRICS.values():
        for ha, hb in _pairs(m.id, a, b):
            va = a.rec.readings(m.id, ha, a.window.start, a.window.end)[1]
            vb = b.rec.readings(m.id, hb, b.window.start, b.window.end)[1]
            j = judge(va, vb, m.better, min_effect, load=m.context)
            host = _host_label(ha, hb)
            rows.append(_row(m, host, None, j))
            if m.per_gpu:
                rows += _gpu_rows(m, a, b, ha, hb, j.verdict, min_effect)
    return rows


def _gpu_rows(m: MetricDef, a: Side, b: Side, ha: str, hb: str, host_verdict: str,
              min_effect: float) -> list[dict[str, Any]]:
    """Per-GPU rows of ``m``, when a GPU's verdict differs from its host's."""
    gpus_a = {g for (mm, h, g) in a.rec.series if mm == m.id and h == ha and g >= 0}
    gpus_b = {g for (mm, h, g) in b.rec.series if mm == m.id and h == hb and g >= 0}
    rows = []
    for gpu in sorted(gpus_a & gpus_b):
        va = a.rec.readings(m.id, ha, a.window.start, a.window.end, gpu)[1]
        vb = b.rec.readings(m.id, hb, b.window.start, b.window.end, gpu)[1]
        if not va or not vb:
            continue
        j = judge(va, vb, m.better, min_effect, load=m.context)
        if j.verdict != host_verdict:
            rows.append(_row(m, _host_label(ha, hb), gpu, j))
    return rows


def _last_capture(side: Side) -> tuple[ev.ProfileCaptured | None, int]:
    inside = [p for p in side.rec.profiles if p.t in side.window]
    return (inside[-1] if inside else None), len(inside)


# --- comparability ---------------------------------------------------------------


def _load_warnings(a: Side, b: Side) -> list[str]:
    out = []
    for metric, what in (("running", "running requests"), ("engine_running", "running requests"),
                         ("batch", "batch"), ("context_tokens", CONTEXT_WHAT)):
        for ha, hb in _pairs(metric, a, b):
            ma, mb = _median(a, metric, ha), _median(b, metric, hb)
            if metric == "context_tokens":  # per running request: a load, not a counter
                ma, mb = _per_request(a, ma, ha), _per_request(b, mb, hb)
            if ma is None or mb is None or effect_pct(ma, mb) <= LOAD_DIFF_PCT:
                continue
            out.append(f"{what} differ: {fmt(ma)} in A, {fmt(mb)} in B "
                       f"(more than {LOAD_DIFF_PCT:.0f} % apart) on {_host_label(ha, hb)}")
    return out


# SGLang's #token is the tokens the running requests hold: compared per running
# request, so a larger batch (or a server restarted with an empty cache) is not
# "another context"
CONTEXT_WHAT = "context per running request (#token / #running-req)"


def _median(side: Side, metric: str, host: str) -> float | None:
    w = side.window
    return summarize(side.rec.readings(metric, host, w.start, w.end)[1]).median


def _per_request(side: Side, tokens: float | None, host: str) -> float | None:
    running = _median(side, "running", host)
    return tokens / running if tokens is not None and running else None


def _gpu_models(side: Side) -> dict[str, tuple[str, ...]]:
    out = {}
    for host, rows in side.rec.gpus.items():
        names = None
        for t, value in rows:
            if t > side.window.end:
                break
            names = value
        if names is not None:
            out[host] = names
    return out


def _kind(names: tuple[str, ...]) -> str:
    kinds = sorted(set(names))
    return f"{len(names)}× {', '.join(kinds) or 'GPU'}"


def _machine_warnings(a: Side, b: Side, hosts_a: list[str], hosts_b: list[str]) -> list[str]:
    out = []
    if set(hosts_a) != set(hosts_b):
        out.append(f"different hosts: A on {', '.join(hosts_a) or '—'}, "
                   f"B on {', '.join(hosts_b) or '—'}")
    ga, gb = _gpu_models(a), _gpu_models(b)
    for host in ga.keys() & gb.keys():
        if ga[host] != gb[host]:
            out.append(f"{host}: GPUs differ: {_kind(ga[host])} in A, {_kind(gb[host])} in B")
    if not (ga.keys() & gb.keys()) and len(ga) == 1 and len(gb) == 1:
        (ha, na), (hb, nb) = next(iter(ga.items())), next(iter(gb.items()))
        if na != nb:
            out.append(f"GPUs differ: {_kind(na)} on {ha} in A, {_kind(nb)} on {hb} in B")
    ma, mb = a.rec.models(a.window.start, a.window.end), b.rec.models(b.window.start, b.window.end)
    if ma and mb and ma != mb:
        out.append(f"different models: {', '.join(sorted(map(visible, ma)))} in A, "
                   f"{', '.join(sorted(map(visible, mb)))} in B")
    return out


def _straddle_warnings(name: str, side: Side) -> list[str]:
    """A restart, a new run or a phase change inside the slice (say where)."""
    w, out = side.window, []
    for s in side.rec.servers:
        if s.state == "starting" and w.start + 1.0 < s.t < w.end - 1.0:
            out.append(f"{name} straddles a restart: server {visible(s.server)} started at "
                       f"{clock(s.t)}")
    for n, t in side.rec.segments:
        if w.start + 1.0 < t < w.end - 1.0:
            out.append(f"{name} straddles run {n} (it started at {clock(t)})")
    for metric in PHASE_METRICS:
        m = METRICS[metric]
        for (mm, host, gpu) in list(side.rec.series):
            if mm != metric or gpu != -1:
                continue
            ts, vs = side.rec.readings(metric, host, w.start, w.end)
            found = changepoints.phases(ts, vs)
            for before, after in zip(found, found[1:]):
                out.append(f"{name} straddles a phase change at {clock(after.start)} on {host}: "
                           f"{m.label} {fmt(before.median)} → {with_unit(after.median, m.unit)}")
    for p in side.rec.profiles:
        if p.t in w:
            out.append(f"{name} holds a profile capture ({visible(p.capture_id)}, ending at "
                       f"{clock(p.t)}): a capture pauses an eager server for seconds")
    return out


# --- the summary line -------------------------------------------------------------


def _headline(row: dict[str, Any]) -> str:
    a, b = row["a"]["median"], row["b"]["median"]
    label = row["name"]
    numbers = f"{fmt(a)} → {with_unit(b, row['unit'])}, {p_text(row['p_value'])}"
    if row["verdict"] == "not enough data":
        return (f"{label}: not enough data (A {row['a']['n']}, B {row['b']['n']} readings; "
                f"{MIN_READINGS} a side needed)")
    if row["verdict"] == "no change" or not a or not b:
        if a and b and abs(row["change_pct"] or 0) >= MIN_EFFECT_PCT:
            return f"B differs from A in {label}, but not significantly ({numbers})"
        return f"B is no different from A in {label} ({numbers})"
    times = b / a if row["better"] == "higher" else a / b
    word = "faster" if times > 1 else "slower"
    times = times if times > 1 else 1 / times
    how = f"{times:.1f}×" if times >= 1.1 else f"{abs(row['change_pct'] or 0):.0f} %"
    return f"B is {how} {word} than A in {label} ({numbers})"


def summary_line(rows: list[dict[str, Any]], profile: ProfileDiff | None) -> str:
    host_rows = [r for r in rows if r["gpu"] is None]
    head = next((r for m in HEADLINE for r in host_rows if r["metric"] == m), None)
    parts = [_headline(head)] if head else []
    idle = next((r for r in host_rows if r["metric"] == "idle_pct"), None)
    if idle is not None:
        parts.append(f"GPU idle {fmt(idle['a']['median'])} → {fmt(idle['b']['median'])} %")
    if profile is not None:
        s = profile.step_ms
        if s.a is not None and s.b is not None:
            sa, sb = pair_texts(s.a, s.b)
            parts.append(f"step {sa} → {sb} ms ({s.speedup_text()})")
        if idle is None and profile.idle_pct.a is not None and profile.idle_pct.b is not None:
            parts.append(f"GPU idle {fmt(profile.idle_pct.a)} → {fmt(profile.idle_pct.b)} % "
                         "(profile)")
        if profile.buckets:
            # a bucket that moved (beyond the noise floor), else the biggest one
            moved = [f for f in profile.buckets if f.verdict != "no change"]
            top = moved[0] if moved else max(profile.buckets, key=lambda f: f.a or 0.0)
            if not moved:
                parts.append(f"{top.name} time per {profile.per} unchanged")
            else:
                ta, tb = pair_texts(top.a, top.b)
                parts.append(f"{top.name} {ta} → {tb} ms/{profile.per} "
                             f"({top.speedup_text()})")
    return "; ".join(parts) if parts else "nothing to compare"


# --- the comparison ---------------------------------------------------------------


def slice_hosts(side: Side) -> list[str]:
    """Hosts with any reading in the slice."""
    w = side.window
    return list(dict.fromkeys(
        h for (m, h, g), s in side.rec.series.items() if g == -1 and s.between(w.start, w.end)[0]))


def side_json(side: Side, hosts: list[str]) -> dict[str, Any]:
    return {"label": visible(side.window.label), "from": side.window.start, "to": side.window.end,
            "hosts": hosts}


def compare(a: Side, b: Side, min_effect: float = MIN_EFFECT_PCT) -> dict[str, Any]:
    """The comparison of slice ``a`` (before) with ``b`` (after), as documented."""
    rows = _metric_rows(a, b, min_effect)
    ca, n_a = _last_capture(a)
    cb, n_b = _last_capture(b)
    profile = diff(ca, cb, min_effect) if ca is not None and cb is not None else None
    hosts_a, hosts_b = slice_hosts(a), slice_hosts(b)
    not_comparable = [*_load_warnings(a, b), *_machine_warnings(a, b, hosts_a, hosts_b),
                      *_straddle_warnings("A", a), *_straddle_warnings("B", b),
                      *(visible(w) for w in (profile.warnings() if profile else []))]
    notes = [f"{r['name']}: not enough data (A {r['a']['n']}, B {r['b']['n']} readings; "
             f"{MIN_READINGS} a side needed)" for r in rows if r["verdict"] == "not enough data"]
    for name, n, chosen in (("A", n_a, ca), ("B", n_b, cb)):
        if n > 1 and chosen is not None:
            notes.append(f"{name} holds {n} profile captures: the last, "
                         f"{visible(chosen.capture_id)}, is compared")
    return {
        "a": side_json(a, hosts_a), "b": side_json(b, hosts_b),
        "comparable": not not_comparable,
        "warnings": [*not_comparable, *notes],
        "summary": summary_line(rows, profile),
        "metrics": rows,
        "profile": profile.to_json() if profile is not None else None,
        "changes": what_changed(a.rec, a.window, b.rec, b.window),
    }
