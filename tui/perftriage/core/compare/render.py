"""A comparison (the JSON of :func:`perftriage.core.compare.compare.compare`)
as text for the terminal and as Markdown for the report: the summary line,
the before/after table, the profile per step, warnings, what else changed."""

from __future__ import annotations

from typing import Any

from perftriage.core.compare.compare import with_unit
from perftriage.core.compare.numbers import pair_texts
from perftriage.core.clock import clock
from perftriage.core.compare.stats import p_text
from perftriage.core.profile.table import short_name
from perftriage.core.sanitize import visible

KERNELS_SHOWN = 8
HEADER = ("metric", "A", "B", "change", "p", "verdict")
MARK = {"improved": "▲", "regressed": "▼", "no change": "=", "not enough data": "?",
        "changed": "≠"}


def _change(row: dict[str, Any]) -> str:
    pct, r = row.get("change_pct"), row.get("ratio")
    if pct is None:
        return "—"
    if r is not None and (r >= 2 or (0 < r <= 0.5)):
        return f"{r:.2f}×" if r < 1 else f"{r:.1f}×"
    return f"{pct:+.1f} %"


def metric_cells(row: dict[str, Any]) -> tuple[str, ...]:
    unit = row["unit"]
    return (visible(row["name"]), with_unit(row['a']['median'], unit),
            with_unit(row['b']['median'], unit), _change(row),
            p_text(row["p_value"]).removeprefix("p ").removeprefix("= "),
            f"{MARK.get(row['verdict'], '')} {row['verdict']}")


def profile_cells(profile: dict[str, Any]) -> list[tuple[str, ...]]:
    per = profile["per"]
    rows: list[tuple[str, ...]] = []

    def add(name: str, f: dict[str, Any], unit: str) -> None:
        if f["a"] is None and f["b"] is None:
            return
        r = f["ratio"]
        ta, tb = pair_texts(f["a"], f["b"])
        rows.append((name, f"{ta} {unit}", f"{tb} {unit}",
                     "—" if r is None else f"{r:.2f}×", "",
                     f"{MARK.get(f['verdict'], '')} {f['verdict']}"))

    add("step time", profile["step_ms"], "ms")
    add(f"kernel time per {per}", profile["kernel_ms"], "ms")
    add("GPU idle (profile)", profile["idle_pct"], "%")
    add(f"exposed communication per {per}", profile["exposed_comm_ms"], "ms")
    for b in profile["buckets"]:
        add(f"{b['bucket']} per {per}", b, "ms")
    # the kernels that moved beyond the noise floor (its "noise_ms"), biggest first
    moved = [k for k in profile["kernels"] if k["verdict"] != "no change"]
    for k in moved[:KERNELS_SHOWN]:
        add(f"{short_name(visible(k['name']), 60)} ({k['change']})", k, "ms")
    return rows


def side_title(side: dict[str, Any]) -> str:
    """``baseline 0:00–0:15`` / ``run 2 (0:34–1:21)``: a side's label, and its
    range unless the label already says it."""
    span = f"{clock(side['from'])}–{clock(side['to'])}"
    label = visible(side["label"])
    return label if span in label.replace("-", "–") else f"{label} ({span})"


def _side(name: str, side: dict[str, Any]) -> str:
    hosts = ", ".join(visible(h) for h in side["hosts"]) or "no hosts"
    return f"{name}  {side_title(side)}  ({hosts})"


def changes_lines(changes: dict[str, list[dict]]) -> list[str]:
    out = []
    for key, title in (("args", "server arguments"), ("server_info", "server info"),
                       ("versions", "versions"), ("hypotheses", "hypotheses")):
        for c in changes.get(key, []):
            out.append(f"{title}: {visible(c['text'])}")
    return out


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    fmt_row = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    return [fmt_row.format(*HEADER).rstrip(), *(fmt_row.format(*r).rstrip() for r in rows)]


def text(result: dict[str, Any]) -> str:
    lines = [_side("A", result["a"]), _side("B", result["b"]), "", visible(result["summary"]), ""]
    lines += _table([metric_cells(r) for r in result["metrics"]])
    if result["profile"] is not None:
        p = result["profile"]
        lines += ["", f"Profile: {visible(p['a'])} → {visible(p['b'])}, per {p['per']}"]
        lines += _table(profile_cells(p))
    if result["warnings"]:
        lines += ["", "Not comparable:" if not result["comparable"] else "Notes:"]
        lines += [f"  - {visible(w)}" for w in result["warnings"]]
    changed = changes_lines(result["changes"])
    if changed:
        lines += ["", "What else changed:", *(f"  - {c}" for c in changed)]
    return "\n".join(lines) + "\n"
