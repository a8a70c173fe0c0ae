"""The stacks samples of a session and what the Stacks view and the report
say about them: a frame's place (``file:line``), the full stack behind a
frame, a sample's headline."""

from __future__ import annotations

from typing import Any

from perftriage.core.stacks.summary import (
    KIND,
    FrameRow,
    ProcessStacks,
    StackRow,
    StacksSummary,
    from_detail,
)


def samples(state: Any) -> list[tuple[Any, StacksSummary]]:
    """Every finished stacks probe that read a process, oldest first, with its summary."""
    out = []
    for p in state.probes.values():
        if p.kind == KIND and p.status == "ok":
            s = from_detail(p.detail)
            if s is not None:
                out.append((p, s))
    return out


def where(f: FrameRow) -> str:
    return f"{f.file}:{f.line}" if f.line is not None else f.file


def stack_of(proc: ProcessStacks, name: str, file: str) -> StackRow | None:
    """The hottest kept stack of ``proc`` that holds the function."""
    needle = f"{name} ({file}"
    return next((st for st in proc.stacks if any(fr.startswith(needle) for fr in st.frames)),
                None)


def headline(p: Any, s: StacksSummary) -> str:
    """``p3 on gpu-a · record 2 s at 100 Hz · 3 processes · top: f (file:line) 88 %``."""
    what = f"record {s.seconds:g} s at {s.rate} Hz" if s.mode == "record" else "dump"
    parts = [f"{p.probe_id} on {p.host}", what, f"{len(s.processes)} process(es)"]
    if s.native:
        parts.append("native frames")
    if s.top is not None:
        line = f":{s.top.line}" if s.top.line is not None else ""
        parts.append(f"top: {s.top.name} ({s.top.file}{line}) {s.top.self_pct:.0f} % self")
    return " · ".join(parts)
