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
    wall_pct,
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


def short_where(f: FrameRow, width: int) -> str:
    """``file:line`` in ``width`` characters: the path shortened from the left at a
    ``/`` (``…/engine/loop.py:12``); the file name and line are always kept whole."""
    full = where(f)
    if len(full) <= width:
        return full
    tail = full[len(full) - max(0, width - 1):]
    cut = tail.find("/")
    if cut < 0:  # not even the file name fits: keep it whole
        return "…" + full[full.rfind("/"):] if "/" in full else full
    return "…" + tail[cut:]


def short_command(cmd: str, width: int = 80) -> str:
    """A command line in ``width`` characters, cut at a word boundary with ``…``."""
    if len(cmd) <= width:
        return cmd
    head = cmd[:width - 1]
    space = head.rfind(" ")
    return (head[:space] if space > 0 else head).rstrip() + " …"


def shares_text(proc: Any) -> str:
    """``22 samples, idle 40 %, GIL 12 %``: a process's samples and its idle
    and GIL shares where known (the probe's answer and the report say it so)."""
    shares = [plural(proc.samples, "sample")]
    if proc.idle_pct is not None:
        shares.append(f"idle {proc.idle_pct:.0f} %")
    if proc.gil_pct is not None:
        shares.append(f"GIL {proc.gil_pct:.0f} %")
    return ", ".join(shares)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 sample``, ``2 samples``, ``1 process``, ``3 processes``."""
    return f"{n} {word if n == 1 else many or word + 's'}"


# Below this many samples a share says nothing: its 95 % interval (Wilson) is
# wider than 45 points whatever the share, 1 of 2 anywhere in 9–91 %, 2 of 4 in
# 15–85 %, even 0 of 4 in 0–49 %; a dump of a process with a thread or two is that.
MIN_SAMPLES = 5


def sample_count(s: StacksSummary) -> int:
    """The samples of every process the probe read (a dump's: its threads)."""
    return sum(p.samples for p in s.processes if p.error is None)


def too_few(s: StacksSummary) -> bool:
    """Too few samples to say anything (fewer than :data:`MIN_SAMPLES`)."""
    return sample_count(s) < MIN_SAMPLES


def few_text(s: StacksSummary) -> str:
    """Why a sample's shares say nothing. A record whose every process was read
    and none ran in any tick did say something: the process only waited."""
    n = sample_count(s)
    if s.mode == "record" and n == 0 and s.processes and all(p.error is None
                                                              for p in s.processes):
        return (f"no busy sample in {s.seconds:g} s at {s.rate} Hz: the process only waited "
                "(py-spy keeps a sample when a thread runs), idle 100 % of wall time")
    return (f"only {plural(n, 'sample')}: too few for a share to say anything "
            f"(fewer than {MIN_SAMPLES})")


def sample_kind(s: StacksSummary) -> str:
    """What a sample measured: ``dump``, ``record``, with ``--gil``/``--native``.
    Shares of samples of different kinds are not like for like."""
    return " ".join([s.mode, *(["--gil"] if s.gil else []), *(["--native"] if s.native else [])])


def stack_of(proc: ProcessStacks, name: str, file: str) -> StackRow | None:
    """The hottest kept stack of ``proc`` that holds the function."""
    needle = f"{name} ({file}"
    return next((st for st in proc.stacks if any(fr.startswith(needle) for fr in st.frames)),
                None)


def top_text(s: StacksSummary) -> str | None:
    """The top frame with both its shares, labelled: of all samples (wall
    time) and of the busy ones, with the counts: ``top: f (file:line) · self
    1.7 % of all samples (wall time) · 41.7 % of the busy ones (10 of 24
    samples, idle 96 %)``. A dump's samples are its threads: one share."""
    parts = top_parts(s)
    return None if parts is None else " · ".join(parts)


def top_parts(s: StacksSummary) -> tuple[str, str] | None:
    """:func:`top_text` in two: ``top: f (file:line)`` and its shares."""
    if s.top is None:
        return None
    t = s.top
    line = f":{t.line}" if t.line is not None else ""
    head = f"top: {t.label()} ({t.file}{line})"
    proc = s.process_of_top()
    if proc is None:
        return head, f"self {t.self_pct:.1f} %"
    row = next((f for f in proc.frames if (f.name, f.file) == (t.name, t.file)), None)
    n = row.self_samples if row is not None else round(t.self_pct * proc.samples / 100)
    if s.mode == "dump":
        return head, (f"self {t.self_pct:.1f} % of the threads "
                      f"({n} of {plural(proc.samples, 'thread')}: a dump is one sample each)")
    idle = f", idle {proc.idle_pct:.0f} %" if proc.idle_pct is not None else ""
    return head, (f"self {wall_pct(t, proc):.1f} % of all samples (wall time) · "
                  f"{t.self_pct:.1f} % of the busy ones ({n} of "
                  f"{plural(proc.samples, 'sample')}{idle})")


def headline(p: Any, s: StacksSummary, top: bool = True) -> str:
    """``p3 on gpu-a · record 2 s at 100 Hz · 3 processes · top: f (file:line)
    · self 1.7 % of all samples (wall time) · 41.7 % of the busy ones (…)``
    (``top=False``: without the top frame, which :func:`top_text` gives)."""
    what = f"record {s.seconds:g} s at {s.rate} Hz" if s.mode == "record" else "dump"
    parts = [f"{p.probe_id} on {p.host}", what, plural(len(s.processes), "process", "processes")]
    if s.gil:
        parts.append("GIL-holding samples only")
    if s.native:
        parts.append("native frames (paused the process" + (" each sample)" if s.mode == "record"
                                                             else ")"))
    if top and (t := top_text(s)) is not None:
        parts.append(t)
    return " · ".join(parts)
