"""Named investigations: one transcript file per name, grown by every run.

``perftriage --session NAME`` keeps the whole investigation NAME in one
transcript, ``<sessions dir>/<file name of NAME>.jsonl``. Its header says
``"investigation": true`` and the name; every run appends a
``segment.started`` event and then its own events, so every reader of one
transcript (replay, report, the timeline) reads the whole investigation.

A name is whatever the engineer types (spaces, unicode, ``../``): the file
name is derived from it so that it is always one plain file inside the
sessions directory, and two different names never share a file
(percent-encoding is one-to-one; a very long name is cut and given a hash
of the whole name).

Only one cockpit records an investigation at a time: it holds an advisory
``flock`` on the file, which the OS releases when the process dies, even by
``kill -9``. Watchers only read.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import mmap
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from perftriage.core.model import events as ev
from perftriage.core.model.state import HISTORY_POINTS, Section, SessionState
from perftriage.core.sanitize import visible
from perftriage.core.store import stream, transcript

MAX_NAME_CHARS = 200
MAX_FILE_BYTES = 180  # well below the 255 bytes a file name may have
SEGMENT_TAG = b'"type":"segment.started"'


class BadName(ValueError):
    """Not a usable investigation name (empty, control characters, too long)."""


class Busy(Exception):
    """Another perftriage records this investigation right now."""


def check_name(name: str) -> str:
    """The name as given, or :class:`BadName` saying why it cannot be one."""
    if not name.strip():
        raise BadName("an investigation name cannot be empty")
    if len(name) > MAX_NAME_CHARS:
        raise BadName(f"an investigation name has at most {MAX_NAME_CHARS} characters "
                      f"(this one has {len(name):,})")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:  # argv bytes that are not UTF-8 arrive as lone surrogates
        raise BadName(f"an investigation name must be UTF-8 text ({_bad_byte(name, exc.start)} "
                      f"at character {exc.start + 1} is not)") from None
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in name):
        raise BadName("an investigation name cannot hold control characters")
    return name


def _bad_byte(name: str, at: int) -> str:
    code = ord(name[at])
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for an undecodable byte
        return f"byte 0x{code - 0xDC00:02x}"
    return f"U+{code:04X}"


def shown_name(name: str, limit: int = 60) -> str:
    """``name`` quoted for an error message: controls and undecodable bytes
    visible, at most ``limit`` characters of it (a 10,000-character argument
    is not echoed whole)."""
    # undecodable bytes as \\xff (os.fsdecode made them lone surrogates)
    try:
        raw = name[:limit].encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no byte stands for
        raw = name[:limit].encode("utf-8", "backslashreplace").decode("utf-8")
    shown = f"'{visible(raw)}'"
    return shown if len(name) <= limit else f"{shown}… ({len(name):,} characters)"


def file_stem(name: str) -> str:
    """A file name for ``name`` (without the suffix): letters, digits and
    ``-_.~`` stay, everything else is percent-encoded (so ``/`` can never
    leave the directory and a leading ``.`` never hides the file)."""
    stem = quote(check_name(name), safe="")
    if stem.startswith("."):
        stem = "%2E" + stem[1:]
    if len(stem) > MAX_FILE_BYTES:
        digest = hashlib.sha256(name.encode()).hexdigest()[:16]
        stem = f"{stem[:MAX_FILE_BYTES - 17].rstrip('%')}-{digest}"
    return stem


def path_for(name: str, sessions_dir: Path) -> Path:
    return Path(sessions_dir) / f"{file_stem(name)}{transcript.SUFFIX}"


def is_investigation(header: dict[str, Any]) -> bool:
    return header.get("investigation") is True


def header_for(name: str, started_at: str, hosts: list[str]) -> dict[str, Any]:
    return transcript.make_header(started_at, hosts, name=name, investigation=True)


def lock(fd: int, name: str) -> None:
    """Take the investigation's recording lock on ``fd`` or raise :class:`Busy`."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise Busy(f"investigation {name!r} is being recorded by another perftriage; "
                       f"`perftriage watch {name}` follows it read-only") from None
        raise


@dataclass
class Restored:
    """An investigation's state after all its events, and what a writer
    continuing it needs. ``log_offsets``: where its ``log.*`` events are,
    for :func:`restore_logs` (the log rings are filled after the first frame)."""

    header: dict[str, Any]
    state: SessionState
    continuation: transcript.Continuation
    last_wall: float | None = None
    end: int = 0  # the offset after the last whole line: a torn tail is cut there
    problems: list[stream.LineProblem] = field(default_factory=list)
    log_offsets: list[int] = field(default_factory=list)


# the start of every event line: its type, and a host sample's host (the
# encoder writes the tag first, then the fields in order: host first); or
# the start of a line of another shape (hand-written, foreign: no group),
# decoded whole so it is applied or counted unreadable, never passed over
_LINE = re.compile(rb'\n(?:\{"type":"([^"\n]*)"(?:,"host":"([^"\\\n]*)")?|(?!\{"type":"))')
# host samples applied per host: the histories keep HISTORY_POINTS; the rest
# covers samples that add no history point (stale GPU readings, no CPU figure)
HOST_TAIL = HISTORY_POINTS * 4


def restore(path: Path, log_ring: int | None = None, *, logs: bool = True) -> Restored:
    """Read the whole investigation through the reducer (the one way state is made).

    Fast for a long one (200k events: most are host samples and log batches):
    one pass over the bytes reads each line's type without decoding it; every
    event is applied in order except host samples, of which each host's last
    :data:`HOST_TAIL` are (its histories are no longer than that), and, with
    ``logs=False``, log batches: :func:`restore_logs` applies every ``log.*``
    event to a state of its own later, and :func:`adopt_logs` takes its logs.
    Handlers of log events touch nothing but the logs, so the two together
    are the whole fold.
    """
    path = Path(path)
    first, offset = stream.header_and_offset(path)
    if not first.strip():
        raise transcript.TranscriptError(f"{path}: empty file, not a perftriage session")
    header = transcript._parse_header(path, first)
    state = SessionState(name=str(header.get("name") or path.stem),
                         started_at=str(header.get("started_at", "")))
    if log_ring:
        state.log_ring = log_ring
    for host in header.get("hosts", []):
        state.host(str(host))
    out = Restored(header=header, state=state, continuation=transcript.Continuation(),
                   end=offset)
    cont, counts = out.continuation, out.continuation.counts
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        whole = mm.rfind(b"\n") + 1  # a torn last line (a run killed mid-write) ends before
        out.end = max(offset, whole)
        if whole < len(mm):
            out.problems.append(stream.LineProblem(_line_of(mm, offset, whole),
                                                   "cut at the end of a run", torn_tail=True))
        find_nl = mm.find
        chosen: list[int] = []  # starts of the events applied
        samples: dict[bytes, list[int]] = {}  # host -> its samples' starts
        last = -1
        # one C-level scan finds every line's type (and a host sample's host)
        for m in _LINE.finditer(mm, offset - 1, out.end):
            at, tag = m.start() + 1, m.group(1)
            if tag is None:  # another shape: blank, a summary, or decoded below
                if at >= out.end:
                    continue  # the end (or a torn last line, said above)
                line = mm[at:find_nl(b"\n", at)]
                if line.strip() and not stream.is_summary(line.lstrip()):
                    last = at
                    cont.events += 1
                    chosen.append(at)
                continue
            if tag == b"session.summary":
                continue
            last = at
            name = tag.decode()
            counts[name] = counts.get(name, 0) + 1
            cont.events += 1
            if tag == b"host.sample" and m.group(2):
                samples.setdefault(m.group(2), []).append(at)
            elif tag.startswith(b"log."):
                out.log_offsets.append(at)
                if tag != b"log.lines" or logs:
                    chosen.append(at)
            else:
                chosen.append(at)
        for starts in samples.values():
            chosen += starts[-HOST_TAIL:]
        chosen.sort()
        from perftriage.core.model import reducer  # (here: a name's lookup needs no reducer)

        decode, apply, find = ev._decoder.decode, reducer.apply, mm.find
        for at in chosen:
            try:
                event = decode(mm[at:find(b"\n", at)])
            except stream.DECODE_ERRORS as exc:
                out.problems.append(stream.LineProblem(_line_of(mm, offset, at), str(exc)))
                continue
            apply(state, event)
        cont.last_t = state.last_t
        if last >= 0:
            try:
                final = decode(mm[last:find(b"\n", last)])
                cont.last_t, out.last_wall = max(state.last_t, final.t), final.wall or None
            except stream.DECODE_ERRORS:
                pass
    # the counters the reducer keeps cover the events not applied here too
    state.last_t, state.event_count = cont.last_t, cont.events
    cont.segments = max(1, len(state.segments))
    return out


def _line_of(mm: mmap.mmap, start: int, at: int) -> int:
    """The 1-based line number of the line at ``at`` (only for a problem)."""
    return 2 + mm[start:at].count(b"\n")


def restore_logs(path: Path, offsets: list[int], log_ring: int | None = None) -> SessionState:
    """Every ``log.*`` event at ``offsets`` through the reducer, into a state of
    its own (run in a thread after the first frame: a long investigation's
    log batches are most of the work)."""
    logs = SessionState()
    if log_ring:
        logs.log_ring = log_ring
    from perftriage.core.model import reducer  # (here: a name's lookup needs no reducer)

    decode, apply = ev._decoder.decode, reducer.apply
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for at in offsets:
            nl = mm.find(b"\n", at)
            try:
                apply(logs, decode(mm[at:nl]))
            except stream.DECODE_ERRORS:
                continue  # restore() reported it
    return logs


def adopt_logs(state: SessionState, restored: SessionState) -> None:
    """Give ``state`` the logs :func:`restore_logs` rebuilt. Sources opened
    since (a server started during the restore) are kept after them."""
    logs = dict(restored.logs)
    for sid, src in state.logs.items():
        if sid not in logs or src.total_lines:
            logs[sid] = src
    batches = restored.log_batches
    batches.extend(state.log_batches)
    state.logs, state.log_batches = logs, batches
    state.bump(Section.LOGS)


def count_segments(path: Path) -> int:
    """Segments of a transcript without decoding it (a file without a summary)."""
    n = 0
    with open(path, "rb") as fh:
        tail = b""
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            data = tail + chunk
            n += data.count(SEGMENT_TAG)
            tail = data[-(len(SEGMENT_TAG) - 1):]  # too short to hold a whole tag again
    return max(1, n)
