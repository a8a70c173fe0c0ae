"""What can be attached to a hypothesis as evidence, without Textual: the
finished probes, the computed gaps, profile captures (their buckets and
biggest kernels), host facts (GPUs, the ``nvidia-smi topo
-m`` matrix), log lines and notes.

Without a search the log's findings come first of all candidates: errors,
kernel fallbacks and warnings, one per repeated line (folded ×N, the newest
sighting attached), most severe first; the ready milestone and throughput
lines follow the other kinds. With a search, every line of every ring
is searched (the whole ring, not only what the pane shows), and the other
kinds are narrowed to those whose text matches.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from perftriage.core.analysis import roofline
from perftriage.core.model.events import RefKind
from perftriage.core.model.host_info import bandwidth_summary
from perftriage.core.model.state import HostState, SessionState
from perftriage.core.search import Budget, PatternError, SearchPattern, literal, matching
from perftriage.core.view.hypothesis_text import probe_summary
from perftriage.core.view.log_kinds import FINDING_KINDS, classify_log_line, decode_throughput, repeat_key
from perftriage.core.view.log_window import compile_pattern, on_shown
from perftriage.core.view.profile_view import evidence_lines

NOTABLE_SHOWN = 200  # notable log lines offered without a search (newest)
MATCHES_SHOWN = 500  # log lines offered for a search (newest); all are counted


@dataclass(frozen=True)
class Candidate:
    ref_kind: RefKind
    ref_id: str
    summary: str
    status: str = ""
    t: float | None = None


@dataclass
class Candidates:
    items: list[Candidate]
    log_matches: int  # log lines that matched (or were notable), before the cap
    log_lines: int  # lines searched: every line of every ring


def search_pattern(text: str) -> SearchPattern | None:
    """The picker's search: a regex (smart case, RE2), or the text itself
    when it is not one RE2 takes (``[TP0`` finds ``[TP0``)."""
    try:
        return compile_pattern(text)
    except PatternError:
        return literal(text) if text else None


def topology_summary(host: str, topo: dict) -> str:
    """``gpu-a topology: 8 GPUs; GPU↔GPU NV18 ×28`` (link kinds counted over
    GPU pairs; NICs named with their nearest link)."""
    columns = topo.get("columns") or []
    gpu_rows = [r for r in topo.get("rows") or [] if r and r[0].startswith("GPU")]
    gpus = [c for c in columns if c.startswith("GPU")]
    links: Counter[str] = Counter()
    for i, row in enumerate(gpu_rows):
        for j, col in enumerate(columns):
            if col.startswith("GPU") and j > i and j + 1 < len(row):
                links[row[j + 1]] += 1
    parts = [f"{len(gpus)} GPUs"]
    if links:
        parts.append("GPU↔GPU " + ", ".join(f"{k} ×{n}" for k, n in links.most_common()))
    nics = [c for c in columns if c.startswith("NIC")]
    if nics:
        parts.append(f"{len(nics)} NICs")
    return f"{host} topology: " + "; ".join(parts)


def gpus_summary(hs: HostState) -> str | None:
    """``gpu-a: 8× NVIDIA H200 (141 GiB), driver 580.95.05, 4814 GB/s per GPU``."""
    kinds = Counter(g.name for g in hs.gpus)
    facts = []
    if kinds:
        mem = {g.name: g.mem_total_mib for g in hs.gpus}
        facts.append(", ".join(
            f"{n}× {name}" + (f" ({mib / 1024:.0f} GiB)" if (mib := mem.get(name)) else "")
            for name, n in kinds.most_common()))
    if hs.info.get("driver"):
        facts.append(f"driver {hs.info['driver']}")
    if (bw := bandwidth_summary(hs.info)) is not None:
        facts.append(bw)
    return f"{hs.name}: " + ", ".join(facts) if facts else None


def host_candidates(state: SessionState) -> list[Candidate]:
    out: list[Candidate] = []
    for name, hs in state.hosts.items():
        if (gpus := gpus_summary(hs)) is not None:
            out.append(Candidate("host", f"{name}:gpus", gpus, "", hs.sample_t))
        topo = hs.info.get("topo")
        if isinstance(topo, dict) and topo.get("rows"):
            out.append(Candidate("host", f"{name}:topology", topology_summary(name, topo)))
        elif hs.info.get("topo_error"):
            out.append(Candidate("host", f"{name}:topology",
                                 f"{name} topology: {hs.info['topo_error']}"))
    return out


def _log_candidates(state: SessionState, pattern: SearchPattern | None
                    ) -> tuple[list[Candidate], list[Candidate], int, int]:
    """(findings, other log candidates newest first and capped; matches
    counted; lines searched). Findings only without a search."""
    found: list[Candidate] = []
    findings: dict[tuple[str, str], tuple[str, int, int, str]] = {}  # kind, count, abs line, text
    count = searched = 0
    cap = MATCHES_SHOWN if pattern is not None else NOTABLE_SHOWN
    budget = Budget()  # a search of every ring, on the UI thread: bounded in time
    for sid, src in state.logs.items():
        first = src.total_lines - len(src.lines) + 1  # absolute number of the ring's first line
        if pattern is not None:
            search = on_shown(pattern)  # as the Logs pane's search: what the row shows
            before = budget.searched
            hits = list(matching(search, src.lines, budget))
            searched += budget.searched - before
        else:
            searched += len(src.lines)
            hits = []
            for i, line in enumerate(src.lines):
                kind = classify_log_line(line)
                if kind in FINDING_KINDS:
                    key = (sid, repeat_key(line.strip()))
                    n = findings[key][1] + 1 if key in findings else 1
                    findings[key] = (kind, n, first + i, line.strip())
                elif kind or decode_throughput(line):
                    hits.append((i, line))
        count += len(hits)
        found += [Candidate("log", f"{sid}:{first + i}", line.strip()[:300])
                  for i, line in hits[-cap:]]
    rank = {k: r for r, k in enumerate(FINDING_KINDS)}
    ordered = sorted(findings.items(), key=lambda kv: (rank[kv[1][0]], -kv[1][2]))
    count += sum(n for _, (_, n, _, _) in ordered)
    top = [Candidate("log", f"{sid}:{at}",
                     (f"{kind} ×{n}: " if n > 1 else f"{kind}: ") + text[:300], kind)
           for (sid, _), (kind, n, at, text) in ordered[:NOTABLE_SHOWN]]
    return top, found[-cap:][::-1], count, searched


def candidates(state: SessionState, query: str = "") -> Candidates:
    """Newest first within each kind: probes, gaps, hosts, log lines, notes."""
    pattern = search_pattern(query) if query else None
    out: list[Candidate] = []
    for p in reversed(list(state.probes.values())):
        if p.finished:
            out.append(Candidate("probe", p.probe_id, probe_summary(p), p.status, p.finished_t))
    for i, g in reversed(list(enumerate(state.gaps, 1))):
        out.append(Candidate("metric", f"gap{i}", roofline.summary_line(g), "", g.t))
    for cap in reversed(state.profiles):
        out += [Candidate("profile", ref, text, "", cap.t) for ref, text in evidence_lines(cap)]
    out += host_candidates(state)
    for i, n in reversed(list(enumerate(state.notes, 1))):
        out.append(Candidate("note", f"note{i}", n.text, "", n.t))
    if pattern is not None:
        out = [c for c in out if pattern.search(c.summary) or pattern.search(c.ref_id)]
    findings, logs, count, searched = _log_candidates(state, pattern)
    notes = [c for c in out if c.ref_kind == "note"]
    rest = [c for c in out if c.ref_kind != "note"]
    return Candidates(findings + rest + logs + notes, count, searched)
