"""What a log view shows, without Textual: the rows of one source (or of all
sources merged in arrival order) after filter-in / filter-out, plus search
and error navigation over those rows.

The lines themselves stay in the bounded rings of ``SessionState.logs``; a
view keeps only keys (``abs`` line numbers, or ``(source_id, abs)`` in the
merged view) in a deque as long as the ring, so memory stays flat however
long the log runs. Changing a filter rebuilds the keys from the ring:
filtering never loses buffered lines. ``refresh`` is incremental.
"""

from __future__ import annotations

import itertools
import re
from collections import deque
from collections.abc import Iterator

from tui.core.logparse import is_error
from tui.core.state import LogSourceState, SessionState

ALL = "*"  # the merged view's source id

Key = int | tuple[str, int]


def compile_pattern(text: str | None) -> re.Pattern | None:
    """A regex (smart case: case-insensitive unless it has a capital)."""
    if not text:
        return None
    flags = 0 if any(c.isupper() for c in text) else re.IGNORECASE
    return re.compile(text, flags)


class _ErrorMatcher:
    """Quacks like a compiled pattern for :meth:`LogIndex.find`."""

    search = staticmethod(is_error)


class LogIndex:
    def __init__(self, state: SessionState, source: str = ALL) -> None:
        self.state = state
        self.source = source
        self.filter_in: re.Pattern | None = None
        self.filter_out: re.Pattern | None = None
        self.search: re.Pattern | None = None
        self.rows: deque[Key] = deque(maxlen=max(1, state.log_ring))
        self.first_seq = 0  # sequence number of rows[0]
        self.matches: deque[int] = deque()  # seqs of rows matching the search
        self._seen: dict[str, int] = {}  # source_id -> total_lines processed
        self.version = 0  # bumped when rows change (caches key on it)

    # --- building ----------------------------------------------------------------

    @property
    def end_seq(self) -> int:
        return self.first_seq + len(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def set_filters(self, filter_in: str | None = None, filter_out: str | None = None) -> None:
        self.filter_in = compile_pattern(filter_in)
        self.filter_out = compile_pattern(filter_out)
        self.rebuild()

    def set_search(self, pattern: str | None) -> None:
        self.search = compile_pattern(pattern)
        self.matches.clear()
        if self.search is not None:
            s = self.search.search
            self.matches.extend(
                seq for seq, key in zip(range(self.first_seq, self.end_seq), self.rows)
                if s(self.line(key) or "")
            )
        self.version += 1

    def rebuild(self) -> None:
        self.rows.clear()
        self.matches.clear()
        self._seen = {}
        self.first_seq = 0
        self.refresh()
        self.version += 1

    def _keep(self, line: str) -> bool:
        if self.filter_in is not None and self.filter_in.search(line) is None:
            return False
        return self.filter_out is None or self.filter_out.search(line) is None

    def _new_lines(self, src: LogSourceState, start: int, end: int) -> Iterator[tuple[int, str]]:
        """(abs, line) for abs in [start, end) still in the ring."""
        base = src.total_lines - len(src.lines)
        start = max(start, base)
        if start >= end:
            return iter(())
        lines = src.lines
        n = len(lines)
        # islice from the right end is cheap for the usual case (new lines at the end)
        offset = start - base
        if offset > n // 2:
            tail = [lines[-k] for k in range(n - offset, n - (end - base), -1)]
            return zip(range(start, end), tail)
        from itertools import islice

        return zip(range(start, end), islice(lines, offset, end - base))

    def _append(self, key: Key, line: str) -> None:
        if len(self.rows) == self.rows.maxlen:
            self.first_seq += 1
        seq = self.first_seq + len(self.rows)
        self.rows.append(key)
        if self.search is not None and self.search.search(line):
            self.matches.append(seq)

    def refresh(self) -> bool:
        """Take in lines that arrived since the last call; True if rows changed."""
        before = (self.first_seq, len(self.rows))
        plain = self.filter_in is None and self.filter_out is None and self.search is None
        if self.source == ALL:
            batches = []
            for sid, end in reversed(self.state.log_batches):
                if end <= self._seen.get(sid, 0):
                    break
                batches.append((sid, end))
            for sid, end in reversed(batches):
                src = self.state.logs.get(sid)
                if src is None:
                    continue
                start = self._seen.get(sid, 0)
                for abs_, line in self._new_lines(src, start, end):
                    if plain or self._keep(line):
                        self._append((sid, abs_), line)
                self._seen[sid] = end
        else:
            src = self.state.logs.get(self.source)
            if src is not None:
                start = self._seen.get(self.source, 0)
                end = src.total_lines
                if end > start:
                    if plain:
                        base = max(start, end - len(src.lines))
                        n_new = end - base
                        if n_new >= self.rows.maxlen:
                            self.first_seq += len(self.rows) + n_new - self.rows.maxlen
                            self.rows.clear()
                        else:
                            overflow = len(self.rows) + n_new - self.rows.maxlen
                            if overflow > 0:
                                self.first_seq += overflow
                        self.rows.extend(range(base, end))
                    else:
                        for abs_, line in self._new_lines(src, start, end):
                            if self._keep(line):
                                self._append(abs_, line)
                    self._seen[self.source] = end
        # drop rows whose lines left their ring, and matches of dropped rows
        while self.rows and self.line(self.rows[0]) is None:
            self.rows.popleft()
            self.first_seq += 1
        while self.matches and self.matches[0] < self.first_seq:
            self.matches.popleft()
        changed = (self.first_seq, len(self.rows)) != before
        if changed:
            self.version += 1
        return changed

    # --- reading -----------------------------------------------------------------

    def line(self, key: Key) -> str | None:
        if isinstance(key, tuple):
            src = self.state.logs.get(key[0])
            abs_ = key[1]
        else:
            src = self.state.logs.get(self.source)
            abs_ = key
        if src is None:
            return None
        off = abs_ - (src.total_lines - len(src.lines))
        if off < 0 or off >= len(src.lines):
            return None
        return src.lines[off]

    def row(self, index: int) -> tuple[Key, str] | None:
        """(key, text) of the view's row ``index`` (0 = oldest kept)."""
        if not 0 <= index < len(self.rows):
            return None
        key = self.rows[index]
        text = self.line(key)
        return None if text is None else (key, text)

    def source_of(self, key: Key) -> str:
        return key[0] if isinstance(key, tuple) else self.source

    # --- navigation ----------------------------------------------------------------

    def find(self, start: int, step: int, pattern: re.Pattern | None = None) -> int | None:
        """Next row index after ``start`` (step +1) or before it (step -1) whose
        line matches ``pattern`` (default: the search), wrapping around."""
        n = len(self.rows)
        if n == 0:
            return None
        if pattern is None:
            if self.search is None or not self.matches:
                return None
            # matches are sorted seqs: pick the neighbour
            cur = self.first_seq + start
            if step > 0:
                after = [s for s in self.matches if s > cur]
                seq = after[0] if after else self.matches[0]
            else:
                before = [s for s in self.matches if s < cur]
                seq = before[-1] if before else self.matches[-1]
            return seq - self.first_seq
        search = pattern.search
        line = self.line
        start = min(max(start, -1), n)
        # walk the deque with iterators (indexing the middle of a deque is O(n))
        if step > 0:
            order = itertools.chain(
                zip(range(start + 1, n), itertools.islice(self.rows, start + 1, None)),
                zip(range(0, start + 1), itertools.islice(self.rows, 0, start + 1)),
            )
        else:
            rev_start = n - start  # rows after `start`, counted from the end
            order = itertools.chain(
                zip(range(start - 1, -1, -1), itertools.islice(reversed(self.rows), rev_start, None)),
                zip(range(n - 1, start - 1, -1), itertools.islice(reversed(self.rows), 0, rev_start)),
            )
        for idx, key in order:
            text = line(key)
            if text is not None and search(text):
                return idx
        return None

    def next_error(self, start: int, step: int) -> int | None:
        return self.find(start, step, _ErrorMatcher)
