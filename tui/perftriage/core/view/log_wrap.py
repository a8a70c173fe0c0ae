"""Where each row of a :class:`~perftriage.core.view.log_window.LogIndex`
lands on screen when long lines wrap (the Logs pane's wrap toggle).

A row of ``c`` cells takes ``ceil(c / width)`` screen lines (at least one).
The map keeps the running total of screen lines per row sequence number,
so finding the row under a screen line is a bisect and new lines cost only
their own count: a flood while wrapped stays O(new lines). A change of
width or a rebuilt index (a new filter) recounts every kept row once.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable

from perftriage.core.view.log_window import Key, LogIndex

# cells a row takes on screen (its source label included), given its key and text
Cells = Callable[[Key, str], int]

COMPACT_AFTER = 4096  # totals of rows that left the ring kept at most this long


class WrapMap:
    def __init__(self) -> None:
        self.width = 0
        self._index: LogIndex | None = None
        self._generation = -1
        self.seq0 = 0  # sequence number of the row whose total is cum[0]
        self.cum = [0]  # cum[i]: screen lines before row seq0 + i

    def _reset(self, index: LogIndex, width: int) -> None:
        self.width = width
        self._index = index
        self._generation = index.generation
        self.seq0 = index.first_seq
        self.cum = [0]

    def sync(self, index: LogIndex, width: int, cells: Cells) -> None:
        """Count the rows the index gained since the last call (all of them
        after a width change or a rebuild)."""
        width = max(1, width)
        end = self.seq0 + len(self.cum) - 1
        if (width != self.width or index is not self._index
                or index.generation != self._generation
                or index.first_seq < self.seq0 or end < index.first_seq):
            self._reset(index, width)
            end = self.seq0
        cum = self.cum
        total = cum[-1]
        line = index.line
        append = cum.append
        for key in itertools.islice(index.rows, end - index.first_seq, None):
            text = line(key)
            n = cells(key, text) if text is not None else 0
            total += (n + width - 1) // width if n > width else 1
            append(total)
        dropped = index.first_seq - self.seq0
        if dropped > COMPACT_AFTER and dropped > len(cum) // 2:
            base = cum[dropped]
            self.cum = [c - base for c in cum[dropped:]]
            self.seq0 = index.first_seq

    def _offset(self, index: LogIndex) -> int:
        return index.first_seq - self.seq0

    def height(self, index: LogIndex) -> int:
        """Screen lines of every kept row."""
        return self.cum[-1] - self.cum[self._offset(index)]

    def locate(self, index: LogIndex, y: int) -> tuple[int, int] | None:
        """(row index, part) at screen line ``y``: part k shows the row's
        cells [k * width, (k + 1) * width)."""
        off = self._offset(index)
        visual = self.cum[off] + y
        if y < 0 or visual >= self.cum[-1]:
            return None
        i = bisect.bisect_right(self.cum, visual) - 1
        return i - off, visual - self.cum[i]

    def y_of(self, index: LogIndex, row: int) -> int:
        """The first screen line of row ``row``."""
        off = self._offset(index)
        row = min(max(row, 0), len(self.cum) - 1 - off)
        return self.cum[off + row] - self.cum[off]
