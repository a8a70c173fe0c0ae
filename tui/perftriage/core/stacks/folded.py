"""py-spy's output as samples.

- ``py-spy record --format raw --threads``: folded stacks, one line per
  distinct stack, root first, leaf last, then the sample count::

      thread (13699): MainThread;<module> (stall.py:25);main (stall.py:23);planted_stall_zq7 (stall.py:7) 123

  (without ``--threads`` the ``thread (...)`` element is absent). A native
  frame has no line: ``clock_nanosleep (libc.so.6)``.
- ``py-spy dump --json``: a list of threads, each with ``thread_name``,
  ``os_thread_id``, ``active``, ``owns_gil`` and ``frames`` (leaf first,
  each ``{name, filename, short_filename, line}``).

The text comes from a remote host: it is never trusted. Lines that do not
parse are counted, not fatal; names and files are cut to a bounded length
(they are made visible only where they are shown).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

MAX_TEXT = 300  # characters kept of a frame's name or file
# a thread id is decimal, or hex after 0x (``thread (abc)`` is neither: a bad line)
_THREAD = re.compile(r"^thread \((0x[0-9a-fA-F]{1,16}|[0-9]{1,20})\)(?:: (.*))?$", re.S)
_COUNT = re.compile(r"[0-9]{1,18}")  # ASCII digits: isdigit() takes "²", int() does not


class StacksError(ValueError):
    """py-spy output that cannot be read at all (a dump that is not JSON)."""


@dataclass(frozen=True)
class Frame:
    name: str
    file: str
    line: int | None = None

    def text(self) -> str:
        """``name (file:line)``, as py-spy writes it."""
        return f"{self.name} ({self.file}:{self.line})" if self.line is not None \
            else f"{self.name} ({self.file})"


@dataclass(frozen=True)
class Sample:
    """One distinct stack of one thread and how often it was seen."""

    frames: tuple[Frame, ...]  # root first, leaf last
    count: int = 1
    thread_id: int | None = None
    thread_name: str = ""
    idle: bool = False  # a dump's thread that py-spy saw idle
    gil: bool = False  # a dump's thread that held the GIL


@dataclass
class Parsed:
    samples: list[Sample]
    bad_lines: int = 0


def parse_frame(text: str) -> Frame:
    """``name (file:line)`` / ``name (file)`` / a bare name."""
    text = text.strip()
    if text.endswith(")") and " (" in text:
        name, _, where = text[:-1].rpartition(" (")
        file, sep, line = where.rpartition(":")
        if sep and line.isdigit():
            return Frame(name[:MAX_TEXT], file[:MAX_TEXT], int(line))
        return Frame(name[:MAX_TEXT], where[:MAX_TEXT], None)
    return Frame(text[:MAX_TEXT], "", None)


def parse_raw(text: str) -> Parsed:
    """Folded stacks (``record --format raw``, with or without ``--threads``)."""
    out = Parsed([])
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        if not stack or not _COUNT.fullmatch(count):
            out.bad_lines += 1
            continue
        parts = stack.split(";")
        tid, tname = None, ""
        if parts[0].startswith("thread ("):
            m = _THREAD.match(parts[0])
            if m is None:
                out.bad_lines += 1
                continue
            tid = int(m.group(1), 16) if m.group(1).startswith("0x") else int(m.group(1))
            tname = (m.group(2) or "")[:MAX_TEXT]
            parts = parts[1:]
        frames = tuple(parse_frame(p) for p in parts if p)
        out.samples.append(Sample(frames, int(count), tid, tname))
    return out


def parse_dump(text: str) -> Parsed:
    """``py-spy dump --json``: one sample per thread (idle threads included)."""
    try:
        threads = json.loads(text)
    except (ValueError, RecursionError) as exc:  # "[[[[…" nests past the parser's depth
        raise StacksError(f"py-spy dump --json is not JSON: {str(exc)[:200]}") from None
    if not isinstance(threads, list):
        raise StacksError("py-spy dump --json is not a list of threads")
    out = Parsed([])
    for t in threads:
        if not isinstance(t, dict) or not isinstance(t.get("frames"), list):
            out.bad_lines += 1
            continue
        frames = []
        for f in reversed(t["frames"]):  # dump lists the leaf first
            if not isinstance(f, dict):
                continue
            line = f.get("line")
            file = f.get("short_filename") or f.get("filename") or ""
            frames.append(Frame(str(f.get("name", ""))[:MAX_TEXT], str(file)[:MAX_TEXT],
                                line if type(line) is int and line > 0 else None))
        tid = t.get("os_thread_id", t.get("thread_id"))
        out.samples.append(Sample(
            tuple(frames), 1, tid if type(tid) is int else None,
            str(t.get("thread_name") or "")[:MAX_TEXT],
            idle=t.get("active") is False, gil=t.get("owns_gil") is True))
    return out
