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

import bisect
import itertools
import re
from collections import deque
from datetime import datetime

from perftriage.core.parse.log_time import line_time
from perftriage.core.parse.logparse import is_error
from perftriage.core.model.state import LogSourceState, SessionState
from perftriage.core.sanitize import shown_line
from perftriage.core.search import Budget, SearchPattern, compile_search, matching

ALL = "*"  # the merged view's source id

Key = int | tuple[str, int]


def compile_pattern(text: str | None) -> SearchPattern | None:
    """A pattern compiled by RE2 (smart case: case-insensitive unless it has
    a capital); :class:`~perftriage.core.search.PatternError` when RE2 does
    not take it."""
    if not text:
        return None
    return compile_search(text)


def on_shown(pattern: SearchPattern):
    """``pattern``'s search on a line as the pane shows it (:func:`shown_line`):
    a search for ``␛`` finds the escape the row shows, and the bytes of a
    colour sequence the row does not show match nothing."""
    search = pattern.search
    return lambda line: search(shown_line(line))


class _ErrorMatcher:
    """Quacks like a compiled pattern for :meth:`LogIndex.find`."""

    search = staticmethod(is_error)


class LogIndex:
    def __init__(self, state: SessionState, source: str = ALL) -> None:
        self.state = state
        self.source = source
        self.filter_in: SearchPattern | None = None
        self.filter_out: SearchPattern | None = None
        self.search: SearchPattern | None = None
        # rows before this sequence number were not searched: the search of
        # the whole ring ran out of its time budget (None: every row searched)
        self.search_cut_seq: int | None = None
        self.capacity = max(1, state.log_ring)  # rows kept; the oldest drop off
        self.rows: deque[Key] = deque(maxlen=self.capacity)
        self.first_seq = 0  # sequence number of rows[0]
        self.matches: deque[int] = deque()  # seqs of rows matching the search
        self.errors: deque[int] = deque()  # seqs of rows that are error lines
        self._seen: dict[str, int] = {}  # source_id -> total_lines processed
        self.version = 0  # bumped when rows change (caches key on it)
        self.generation = 0  # bumped when rows are rebuilt from the rings

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

    def set_search(self, pattern: str | None, budget: Budget | None = None) -> None:
        """Search every row, newest first, under ``budget`` (default: the ring
        budget); rows older than where it ran out stay unsearched
        (``search_cut_seq``). A pattern RE2 refuses raises PatternError and
        leaves the search as it was."""
        search = compile_pattern(pattern)
        self.search = search
        self.matches.clear()
        self.search_cut_seq = None
        if search is not None:
            budget = budget or Budget()
            line = self.line
            newest_first = (line(key) or "" for key in reversed(self.rows))
            end = self.end_seq
            found = [end - 1 - i for i, _ in matching(on_shown(search), newest_first, budget)]
            if budget.cut:  # the rows not searched: the oldest ones
                self.search_cut_seq = end - budget.searched
            found.reverse()
            self.matches.extend(found)
        self.version += 1

    def rebuild(self) -> None:
        self.generation += 1
        self.rows.clear()
        self.matches.clear()
        self.errors.clear()
        self._seen = {}
        self.first_seq = 0
        self.refresh()
        self.version += 1

    def _keep(self, line: str) -> bool:
        line = shown_line(line)  # filters see what the row shows, as search does
        if self.filter_in is not None and self.filter_in.search(line) is None:
            return False
        return self.filter_out is None or self.filter_out.search(line) is None

    def _extend(self, keys, n: int) -> None:
        """Append ``n`` keys; the deque drops as many from the left as overflow."""
        overflow = len(self.rows) + n - self.capacity
        if overflow > 0:
            self.first_seq += overflow
        self.rows.extend(keys)

    def _take(self, sid: str, src: LogSourceState, start: int, end: int) -> None:
        """Append the rows of ``src``'s lines [start, end) still in its ring:
        a few C-level calls per batch, never a Python call per line unless a
        filter or a search has to look at each line."""
        base = max(start, src.total_lines - len(src.lines))
        if base >= end:
            return
        merged = self.source == ALL
        errs = src.errors
        # error line numbers in [base, end): new ones are at the right end
        new_errors = []
        for abs_ in reversed(errs):
            if abs_ < base:
                break
            if abs_ < end:
                new_errors.append(abs_)
        new_errors.reverse()
        seq0 = self.end_seq
        lines = src.lines
        ring_base = src.total_lines - len(lines)
        filtered = self.filter_in is not None or self.filter_out is not None
        if not filtered:
            n = end - base
            absolutes = range(base, end)
            self._extend(zip(itertools.repeat(sid), absolutes) if merged else absolutes, n)
            if new_errors:
                self.errors.extend([seq0 + a - base for a in new_errors])
            if self.search is not None:
                s = on_shown(self.search)
                self.matches.extend([
                    seq0 + k for k, ln in
                    enumerate(itertools.islice(lines, base - ring_base, end - ring_base)) if s(ln)
                ])
            return
        keep = self._keep
        kept = [a for a, ln in zip(range(base, end),
                                   itertools.islice(lines, base - ring_base, end - ring_base))
                if keep(ln)]
        if not kept:
            return
        self._extend(zip(itertools.repeat(sid), kept) if merged else kept, len(kept))
        if new_errors:
            for a in new_errors:
                k = bisect.bisect_left(kept, a)
                if k < len(kept) and kept[k] == a:
                    self.errors.append(seq0 + k)
        if self.search is not None:
            s = on_shown(self.search)
            self.matches.extend([
                seq0 + k for k, a in enumerate(kept) if s(lines[a - ring_base])
            ])

    def refresh(self) -> bool:
        """Take in lines that arrived since the last call (O(new lines)); True
        if rows changed."""
        before = (self.first_seq, len(self.rows))
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
                self._take(sid, src, self._seen.get(sid, 0), end)
                self._seen[sid] = end
        else:
            src = self.state.logs.get(self.source)
            if src is not None:
                start = self._seen.get(self.source, 0)
                end = src.total_lines
                if end > start:
                    self._take(self.source, src, start, end)
                    self._seen[self.source] = end
        # drop rows whose lines left their ring, and matches/errors of dropped rows
        while self.rows and self.line(self.rows[0]) is None:
            self.rows.popleft()
            self.first_seq += 1
        first = self.first_seq
        for seqs in (self.matches, self.errors):
            while seqs and seqs[0] < first:
                seqs.popleft()
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

    @staticmethod
    def _neighbour(seqs: deque[int], cur: int, step: int) -> int | None:
        """The seq after ``cur`` (step +1) or before it (step -1) in the sorted
        ``seqs``, wrapping around: a bisect, not a scan."""
        if not seqs:
            return None
        if step > 0:
            k = bisect.bisect_right(seqs, cur)
            return seqs[k] if k < len(seqs) else seqs[0]
        k = bisect.bisect_left(seqs, cur) - 1
        return seqs[k] if k >= 0 else seqs[-1]

    def find(self, start: int, step: int,
             pattern: SearchPattern | _ErrorMatcher | None = None) -> int | None:
        """Next row index after ``start`` (step +1) or before it (step -1) whose
        line matches ``pattern`` (default: the search), wrapping around."""
        n = len(self.rows)
        if n == 0:
            return None
        if pattern is None:
            if self.search is None:
                return None
            seq = self._neighbour(self.matches, self.first_seq + start, step)
            return None if seq is None else seq - self.first_seq
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
        """Like :meth:`find` for error lines, from the error index kept in step
        with the rows (the reducer marks error lines as they arrive)."""
        if not self.rows:
            return None
        seq = self._neighbour(self.errors, self.first_seq + start, step)
        return None if seq is None else seq - self.first_seq

    # --- search position and time ----------------------------------------------------

    def match_position(self, index: int) -> tuple[int, int]:
        """(k, N): the row ``index`` is at or just after the k-th of N search
        matches (k = 0 before the first), for a "match k of N" counter."""
        n = len(self.matches)
        if n == 0:
            return 0, 0
        return bisect.bisect_right(self.matches, self.first_seq + index), n

    def row_at_time(self, target: datetime) -> int | None:
        """The first row logged at or after ``target`` (a line without a
        timestamp takes the nearest one above it); None when every row is
        older. Rows are in arrival order, so their times are taken as
        ascending: a bisect, not a scan."""
        rows = list(self.rows)
        if not rows:
            return None
        year = target.year
        line = self.line

        def time_of(i: int) -> datetime | None:
            for j in range(i, max(i - 64, -1), -1):
                ts = line_time(line(rows[j]) or "", year)
                if ts is not None:
                    return ts
            return None

        lo, hi = 0, len(rows)
        while lo < hi:
            mid = (lo + hi) // 2
            ts = time_of(mid)
            if ts is None or ts < target:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < len(rows) else None

    def last_time(self) -> datetime | None:
        """The newest timestamp among the last rows (the date a bare time means)."""
        for key in itertools.islice(reversed(self.rows), 256):
            ts = line_time(self.line(key) or "", datetime.now().year)
            if ts is not None:
                return ts
        return None


_TIME_INPUT = re.compile(
    r"^\s*(?:(?:(?P<y>\d{4})-)?(?P<mo>\d{1,2})-(?P<d>\d{1,2})[ T])?"
    r"(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2}))?\s*$")


def parse_jump_time(text: str, reference: datetime | None) -> datetime:
    """A time typed to jump to: ``HH:MM[:SS]`` (on ``reference``'s day, the
    log's newest), ``MM-DD HH:MM[:SS]`` or ``YYYY-MM-DD HH:MM[:SS]``.
    Raises ValueError with a one-line reason."""
    m = _TIME_INPUT.match(text)
    if m is None:
        raise ValueError("a time is HH:MM[:SS], MM-DD HH:MM or YYYY-MM-DD HH:MM[:SS]")
    ref = reference or datetime.now()
    g = m.groupdict()
    return datetime(int(g["y"] or ref.year), int(g["mo"] or ref.month), int(g["d"] or ref.day),
                    int(g["h"]), int(g["mi"]), int(g["s"] or 0))


def source_label(src: LogSourceState | None, source_id: str = "") -> str:
    """One name for a log source, the same on its tab and on its lines in
    the merged view: ``host:file`` (no host for localhost)."""
    if src is None:
        return source_id
    name = src.path.rsplit("/", 1)[-1] or src.path
    host = "" if src.host in ("localhost", "?") else f"{src.host}:"
    return f"{host}{name}"

