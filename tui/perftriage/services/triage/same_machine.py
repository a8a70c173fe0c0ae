"""One machine under two names: an SSH host and ``localhost`` whose GPUs
have the same UUIDs (the cockpit runs on the GPU machine and also reaches
it over SSH). Each got its own phases and findings, each half the evidence
(the capture on one, the stacks on the other). Here they are
said to be one machine once, and their evidence is read as the SSH host's.
"""

from __future__ import annotations

import msgspec

from perftriage.core.compare.recording import Recording
from perftriage.core.model.state import SessionState


def aliases(state: SessionState) -> dict[str, str]:
    """host -> the host it is the same machine as (its GPUs' UUIDs are the
    same, and there is at least one); the SSH name is kept over ``localhost``."""
    by_gpus: dict[frozenset[str], list[str]] = {}
    for name, hs in state.hosts.items():
        uuids = frozenset(g.uuid for g in hs.gpus if g.uuid)
        if uuids:
            by_gpus.setdefault(uuids, []).append(name)
    out: dict[str, str] = {}
    for names in by_gpus.values():
        if len(names) < 2:
            continue
        names.sort(key=lambda n: (n == "localhost", n))
        out.update({n: names[0] for n in names[1:]})
    return out


def joined(rec: Recording, alias: dict[str, str]) -> Recording:
    """``rec`` with each alias's evidence under its host's name (a series the
    host has itself is kept as its own). ``rec`` is not changed."""
    if not alias:
        return rec
    series = dict(rec.series)  # (reads the queued log batches first)
    for (metric, host, gpu), s in list(series.items()):
        if host in alias:
            del series[(metric, host, gpu)]
            series.setdefault((metric, alias[host], gpu), s)

    def host_of(h: str) -> str:
        return alias.get(h, h)

    throttles: dict = {}
    for h, rows in rec.throttles.items():
        throttles.setdefault(host_of(h), []).extend(rows)
    return Recording(
        name=rec.name, _all=series, duration=rec.duration, segments=list(rec.segments),
        servers=[msgspec.structs.replace(s, host=host_of(s.host)) for s in rec.servers],
        profiles=[msgspec.structs.replace(p, host=host_of(p.host)) for p in rec.profiles],
        stacks=[(t, host_of(h), pid, d) for t, h, pid, d in rec.stacks],
        ncu=[(t, host_of(h), pid, d) for t, h, pid, d in rec.ncu],
        throttles=throttles, bulk_logs=False)


def said(alias: dict[str, str], state: SessionState) -> list[str]:
    """The note for each alias: once, when it is first seen."""
    out = []
    for other, host in alias.items():
        n = len([g for g in state.hosts[host].gpus if g.uuid])
        out.append(f"{other} and {host} are the same machine (the same {n} GPU UUID"
                   f"{'s' if n != 1 else ''}): the triage reads their evidence as {host}'s")
    return out
