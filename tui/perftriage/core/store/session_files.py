"""Listing saved sessions without reading their events.

``perftriage sessions`` must stay fast whatever the files' sizes: each file
is described from its header (line 1) and its last bytes — the summary line
the writer appends at close (event count, duration, counts per type), or,
for a file without one (crashed, older, written by another tool), the time
of its last readable event with the count unknown.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datetime import datetime, timezone

from perftriage.core.store import investigations, paths, stream, transcript


@dataclass
class SessionInfo:
    path: Path
    started_at: str | None = None
    hosts: list[str] | None = None
    duration_s: float | None = None
    events: int | None = None  # None: unknown (no summary line)
    ended: bool | None = None
    torn_tail: bool = False
    size_bytes: int = 0
    counts: dict[str, int] | None = None
    error: str | None = None  # unreadable: why
    investigation: str | None = None  # the name of a named investigation
    segments: int = 1  # runs of a named investigation
    last_activity: str | None = None  # ISO time the file last grew
    recording: bool = False  # a perftriage writes it now (its recording lock is held)

    @property
    def name(self) -> str:
        """What ``replay``/``report``/``watch`` take: an investigation's name, else the file's."""
        return self.investigation if self.investigation is not None else self.path.name

    def count(self, *tags: str) -> int | None:
        """Events of these types (None: unknown, no summary line)."""
        if self.counts is None:
            return None
        return sum(int(self.counts.get(t, 0)) for t in tags)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "path": str(self.path), "started_at": self.started_at,
            "hosts": self.hosts, "duration_s": self.duration_s, "events": self.events,
            "ended": self.ended, "torn_tail": self.torn_tail, "size_bytes": self.size_bytes,
            "counts": self.counts, "error": self.error,
            "investigation": self.investigation, "segments": self.segments,
            "last_activity": self.last_activity, "recording": self.recording,
        }


def describe(path: Path) -> SessionInfo:
    info = SessionInfo(path=Path(path))
    try:
        header = transcript.read_header(path)
        tail = stream.read_tail(path)
    except (transcript.TranscriptError, OSError) as exc:
        info.error = str(exc)
        return info
    if tail.summary_error is not None:
        info.error = f"bad session.summary line: {tail.summary_error}"
        return info
    info.started_at = str(header.get("started_at", "")) or None
    try:
        mtime = Path(path).stat().st_mtime
        info.last_activity = datetime.fromtimestamp(mtime, timezone.utc).isoformat(
            timespec="seconds")
    except OSError:
        pass
    if investigations.is_investigation(header):
        info.investigation = str(header.get("name") or Path(path).stem)
    info.hosts = [str(h) for h in header.get("hosts", [])]
    info.size_bytes = tail.size
    info.torn_tail = tail.torn_tail
    info.duration_s = tail.duration_s
    info.events = tail.events
    if tail.summary is not None:
        info.ended = bool(tail.summary.get("ended"))
        counts = tail.summary.get("counts")
        info.counts = dict(counts) if isinstance(counts, dict) else None
        segments = tail.summary.get("segments")
        info.segments = segments if isinstance(segments, int) and segments > 0 else 1
    else:  # no summary yet: being recorded, or a run that crashed
        info.recording = being_recorded(Path(path))
        if info.investigation is not None:
            info.segments = investigations.count_segments(Path(path))
    return info


def being_recorded(path: Path) -> bool:
    """Whether a perftriage holds ``path``'s recording lock now (a live
    cockpit's session or investigation): a shared lock is refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
    finally:
        os.close(fd)  # closing drops a lock this call took
    return False


def session_files(directory: Path) -> list[Path]:
    """Transcripts in ``directory``, newest first (names start with the date)."""
    if not directory.is_dir():
        return []
    return sorted(directory.glob(f"*{transcript.SUFFIX}"), reverse=True)


def latest(directory: Path) -> Path | None:
    """The most recently modified transcript in ``directory``."""
    files = session_files(directory)
    return max(files, key=lambda p: p.stat().st_mtime) if files else None


def bundled_sessions_dir() -> Path:
    """The bundled example sessions (packaged, or ``sessions/`` of the checkout)."""
    return paths.package_data_dir("sessions")


def resolve_session(name: str, sessions_dir: Path) -> Path | None:
    """A session given as a file path, else a name in ``sessions_dir`` (as
    ``perftriage sessions`` prints it, ``.jsonl`` optional), else a bundled
    example; None when none of them exists. A named investigation's name
    comes first (``perftriage replay "my run"``). A name no file can have
    (too long for the file system, not UTF-8) is simply not found."""
    try:
        named = investigations.path_for(name, sessions_dir)
    except investigations.BadName:
        named = None
    if named is not None and _is_file(named):
        return named
    as_path = Path(name).expanduser()
    if _is_file(as_path):
        return as_path
    if "/" in name or name in ("", ".", ".."):
        return None
    for directory in (Path(sessions_dir), bundled_sessions_dir()):
        for candidate in (directory / name, directory / f"{name}{transcript.SUFFIX}"):
            if _is_file(candidate):
                return candidate
    return latest_unnamed(name, Path(sessions_dir))


# an unnamed session's file: ``20261204-034641-demo.jsonl`` (session_filename)
STAMPED = re.compile(r"^\d{8}-\d{6}-(?P<name>.+)" + re.escape(transcript.SUFFIX) + "$")


def latest_unnamed(name: str, sessions_dir: Path) -> Path | None:
    """The newest unnamed session recorded as ``name`` (the cockpit's title,
    ``demo``): its file is ``YYYYmmdd-HHMMSS-NAME.jsonl``, so the name the
    screen showed reaches it."""
    try:
        entries = [e for e in os.scandir(sessions_dir)
                   if (m := STAMPED.match(e.name)) and m.group("name") == name]
    except OSError:
        return None
    for entry in sorted(entries, key=lambda e: e.name, reverse=True):
        path = Path(entry.path)
        if _is_file(path):
            return path
    return None


def not_found(name: str, sessions_dir: Path, *, what: str = "session") -> str:
    """Why ``name`` names no session, in one line: the name shown short and
    visible, and what it cannot be (too long, not UTF-8, ...)."""
    shown = investigations.shown_name(name)
    try:
        investigations.check_name(name)
    except investigations.BadName as exc:
        return f"no {what} {shown}: {exc}, and no file has that name"
    if what == "investigation":
        return (f"no investigation {shown} in {sessions_dir} "
                "(see `perftriage sessions`; `perftriage -s NAME` starts one)")
    return (f"no session {shown}: not a file, not in {sessions_dir}, "
            "not a bundled example (see `perftriage sessions`)")


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):  # File name too long, an embedded NUL
        return False
