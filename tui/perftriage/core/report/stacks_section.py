"""The report's "Stacks" section: each stacks sample's headline and, per
process, its top frames (self and total share, ``file:line``); what grew or
shrank since the sample before."""

from __future__ import annotations

from perftriage.core.model.state import SessionState
from perftriage.core.report.md_text import cell, code, code_cell, inline
from perftriage.core.stacks.compare import baseline, compare
from perftriage.core.stacks.samples import (
    headline,
    sample_kind,
    samples,
    shares_text,
    short_command,
    where,
)

TOP = 10


def stacks_section(state: SessionState) -> list[str]:
    found = samples(state)
    if not found:
        return []
    out = ["## Stacks", ""]
    kinds = [sample_kind(s) for _, s in found]
    for i, (p, s) in enumerate(found):
        out += [f"### {inline(p.probe_id)}", "", inline(headline(p, s)), ""]
        for proc in s.processes:
            name = f"pid {proc.pid} {inline(short_command(proc.name))}"
            if proc.error is not None:
                out += [f"{name}: {inline(proc.error)}", ""]
                continue
            out += [f"{name}: {shares_text(proc)}", "", "| frame | where | self | total |",
                    "|---|---|---:|---:|"]
            out += [f"| {code_cell(f.name)} | {cell(where(f))} | {f.self_pct:.1f} % | "
                    f"{f.total_pct:.1f} % |" for f in proc.frames[:TOP]]
            out.append("")
        base = baseline(kinds, i)
        if base is not None:
            j, alike = base
            since = inline(found[j][0].probe_id)
            if not alike:
                out.append(f"- not compared with {since}: a {kinds[j]}, this a {kinds[i]} "
                           "(different kinds of sample)")
            else:
                grew, shrank = compare(found[j][1], s)
                for label, items in (("grew", grew), ("shrank", shrank)):
                    if items:
                        out.append(f"- {label} since {since}: " + "; ".join(
                            f"{code(c.name)} {c.before_pct:.1f} → {c.after_pct:.1f} %"
                            for c in items[:5]))
                if not grew and not shrank:  # the noise floor: a two-proportion test
                    n = [sum(x.samples for x in f.processes) for f in (found[j][1], s)]
                    out.append(f"- since {since}: no function moved past the noise floor "
                               f"({n[1]} against {n[0]} samples)")
            out.append("")
    return out
