"""The report's "Stacks" section: each stacks sample's headline and, per
process, its top frames (self and total share, ``file:line``); what grew or
shrank since the sample before."""

from __future__ import annotations

from perftriage.core.model.state import SessionState
from perftriage.core.report.md_text import cell, code, inline
from perftriage.core.stacks.compare import compare
from perftriage.core.stacks.samples import headline, samples, where

TOP = 10


def stacks_section(state: SessionState) -> list[str]:
    found = samples(state)
    if not found:
        return []
    out = ["## Stacks", ""]
    prev = None
    for p, s in found:
        out += [f"### {inline(p.probe_id)}", "", inline(headline(p, s)), ""]
        for proc in s.processes:
            name = f"pid {proc.pid} {inline(proc.name[:80])}"
            if proc.error is not None:
                out += [f"{name}: {inline(proc.error)}", ""]
                continue
            shares = [f"{proc.samples} samples"]
            if proc.idle_pct is not None:
                shares.append(f"idle {proc.idle_pct:.0f} %")
            if proc.gil_pct is not None:
                shares.append(f"GIL {proc.gil_pct:.0f} %")
            out += [f"{name}: {', '.join(shares)}", "", "| frame | where | self | total |",
                    "|---|---|---:|---:|"]
            out += [f"| {code(f.name)} | {cell(where(f))} | {f.self_pct:.1f} % | "
                    f"{f.total_pct:.1f} % |" for f in proc.frames[:TOP]]
            out.append("")
        if prev is not None:
            grew, shrank = compare(prev, s)
            for label, items in (("grew", grew), ("shrank", shrank)):
                if items:
                    out.append(f"- {label} since {inline(found[found.index((p, s)) - 1][0].probe_id)}: "
                               + "; ".join(f"{code(c.name)} {c.before_pct:.1f} → {c.after_pct:.1f} %"
                                           for c in items[:5]))
            out.append("")
        prev = s
    return out
