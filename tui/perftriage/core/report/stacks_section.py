"""The report's "Stacks" section: each stacks sample's headline and, per
process, its top frames (self and total share, ``file:line``); what grew or
shrank since the sample before. A sample of too few samples to say anything
(:func:`~perftriage.core.stacks.samples.too_few`: a dump of a process with a
thread or two) is not shown: one line names them all."""

from __future__ import annotations

from typing import Any

from perftriage.core.model.state import SessionState
from perftriage.core.report.md_text import cell, code, code_cell, inline
from perftriage.core.stacks.compare import baseline, compare
from perftriage.core.stacks.samples import (
    MIN_SAMPLES,
    headline,
    plural,
    sample_count,
    sample_kind,
    samples,
    shares_text,
    short_command,
    too_few,
    where,
)
from perftriage.core.stacks.summary import StacksSummary

TOP = 10


def collapsed(state: SessionState) -> set[str]:
    """The probe ids of the samples the report does not show (too few samples)."""
    return {p.probe_id for p, s in samples(state) if too_few(s)}


def few_line(few: list[tuple[Any, StacksSummary]]) -> str:
    """``p5, p6: 2 samples each, not shown (…)``: the samples too small to show."""
    counts = [sample_count(s) for _, s in few]
    ids = [inline(p.probe_id) for p, _ in few]
    if len(few) == 1:
        head = f"{ids[0]}: {plural(counts[0], 'sample')}, not shown"
    elif len(set(counts)) == 1:
        head = f"{', '.join(ids)}: {plural(counts[0], 'sample')} each, not shown"
    else:
        head = ", ".join(f"{i} ({plural(n, 'sample')})" for i, n in zip(ids, counts)) + \
            ": not shown"
    return (f"{head} (fewer than {MIN_SAMPLES} samples: a share of them says nothing, "
            "1 of 2 is anywhere in 9–91 %)")


def stacks_section(state: SessionState) -> list[str]:
    every = samples(state)
    if not every:
        return []
    out = ["## Stacks", ""]
    few = [(p, s) for p, s in every if too_few(s)]
    if few:
        out += [few_line(few), ""]
    # compared only among the samples shown: a change against two samples is no change
    found = [(p, s) for p, s in every if not too_few(s)]
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
