"""One machine under several names: hosts whose GPUs have the same UUIDs
(the cockpit runs on the GPU machine and also reaches it over SSH, or reads
one GPU through dmon and through pynvml) are one host to the triage, named
as the SSH host (never ``localhost``), their evidence read as that host's:
a capture on one name and stacks on the other make one diagnosis, not two
halves. Every reader groups them here, through :func:`grouped`: the live
triage, ``perftriage triage``, the report and ``replay --json`` (so they
name the same host and the same top cause for a phase).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import msgspec

from perftriage.core.compare.recording import Recording
from perftriage.core.model.state import SessionState


def uuids_of(state: SessionState) -> dict[str, frozenset[str]]:
    """host -> its GPUs' UUIDs, as the state last read them."""
    return {name: frozenset(g.uuid for g in hs.gpus if g.uuid)
            for name, hs in state.hosts.items()}


def aliases(uuids: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """host -> the host it is the same machine as (its GPUs' UUIDs are the
    same, and there is at least one); the SSH name is kept over ``localhost``,
    else the first by name. ``uuids``: host -> its GPUs' UUIDs
    (:attr:`Recording.gpu_uuids`, :func:`uuids_of` a state)."""
    by_gpus: dict[frozenset[str], list[str]] = {}
    for name, got in uuids.items():
        if key := frozenset(u for u in got if u):
            by_gpus.setdefault(key, []).append(name)
    out: dict[str, str] = {}
    for names in by_gpus.values():
        if len(names) < 2:
            continue
        names.sort(key=lambda n: (n == "localhost", n))
        out.update({n: names[0] for n in names[1:]})
    return out


def joined(rec: Recording, alias: Mapping[str, str]) -> Recording:
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
        throttles=throttles, bulk_logs=False,
        gpu_uuids={h: u for h, u in rec.gpu_uuids.items() if h not in alias})


def grouped(rec: Recording) -> Recording:
    """``rec`` with the hosts of one machine as one (:func:`joined` by the
    recording's own GPU UUIDs); ``rec`` itself when each host is its own."""
    return joined(rec, aliases(rec.gpu_uuids))


def said(alias: Mapping[str, str], uuids: Mapping[str, Iterable[str]]) -> list[str]:
    """The note for each alias (the live triage says it once, when first seen)."""
    out = []
    for other, host in alias.items():
        n = len({u for u in uuids.get(host, ()) if u})
        out.append(f"{other} and {host} are the same machine (the same {n} GPU UUID"
                   f"{'s' if n != 1 else ''}): the triage reads their evidence as {host}'s")
    return out
