"""Searching text for a pattern that did not come from this code: typed in
the Logs pane (search, filters), the evidence picker's query, a finding's
``log-search`` step (possibly read from a shared transcript), auto mode's
log scan.

Every such pattern is compiled by RE2 (google-re2), whose matching time is
linear in the text whatever the pattern: ``(.|.)*QQQQ`` costs what ``Q``
costs, where Python's ``re`` backtracks for ever. What RE2 refuses
(lookarounds, backreferences, a repetition past its limits, a pattern too
large for its memory bound) is a :class:`PatternError` with one line saying
why, never an exception that ends the program. A search over many lines
(a whole log ring) runs under a :class:`Budget`: past it, it stops and says
how far it got.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import re2

from perftriage.core.sanitize import visible
from perftriage.core.refusals import refusal

MAX_PATTERN_CHARS = 1000  # longer than any search typed; a recorded one is cut off here
RING_BUDGET_S = 0.5  # a search over a whole ring (the UI thread waits for it)
CHECK_EVERY = 64  # lines between two readings of the clock

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the reason is said to the user, not written on stderr
_OPTIONS.max_mem = 8 << 20  # a pattern needing more is refused at compile time
_OPTIONS_I = re2.Options()
_OPTIONS_I.log_errors = False
_OPTIONS_I.max_mem = 8 << 20
_OPTIONS_I.case_sensitive = False


class PatternError(ValueError):
    """A pattern RE2 does not take; ``str()`` is one line for the user."""


class SearchPattern:
    """A compiled pattern with the ``search`` / ``finditer`` of ``re.Pattern``
    (their matches have ``start()``, ``end()``, ``span()``, ``group()``)."""

    __slots__ = ("text", "search", "finditer")

    def __init__(self, text: str, rx: Any) -> None:
        self.text = text
        self.search: Callable[[str], Any] = rx.search
        self.finditer: Callable[[str], Iterator[Any]] = rx.finditer

    def __repr__(self) -> str:
        return f"SearchPattern({shown_pattern(self.text)!r})"


def shown_pattern(text: str, limit: int = 80) -> str:
    """A pattern for a message: one line, controls visible, cut at ``limit``."""
    text = visible(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _reason(exc: BaseException) -> str:
    why = exc.args[0] if exc.args else exc
    why = why.decode(errors="replace") if isinstance(why, bytes) else str(why)
    return shown_pattern(why, 120)  # RE2 quotes the pattern: hostile text too


def compile_search(text: str, *, smart_case: bool = True) -> SearchPattern:
    """``text`` compiled by RE2. Smart case: case-insensitive unless the
    pattern holds a capital letter."""
    if not isinstance(text, str):
        raise PatternError(f"a pattern is text, not {type(text).__name__}")
    if len(text) > MAX_PATTERN_CHARS:
        raise PatternError(f"pattern of {len(text):,} characters is over the "
                           f"{MAX_PATTERN_CHARS:,}-character limit")
    insensitive = smart_case and not any(c.isupper() for c in text)
    try:
        rx = re2.compile(text, _OPTIONS_I if insensitive else _OPTIONS)
    except (re2.error, TypeError, ValueError, UnicodeError) as exc:
        raise PatternError(f"not a pattern RE2 takes: {_reason(exc)}") from None
    return SearchPattern(text, rx)


def literal(text: str) -> SearchPattern:
    """``text`` searched as it is (smart case still applies)."""
    return compile_search(re2.escape(text[:MAX_PATTERN_CHARS // 2]))


def pattern_error(text: str) -> str | None:
    """Why ``text`` is not a pattern (for a prompt's validation), or None."""
    return refusal(compile_search, text)  # (a PatternError is a ValueError)


class Budget:
    """A time bound over many searches. :meth:`spent` reads the clock once in
    ``CHECK_EVERY`` calls, so a search of short lines pays almost nothing."""

    __slots__ = ("deadline", "clock", "searched", "cut")

    def __init__(self, seconds: float = RING_BUDGET_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.deadline = clock() + seconds
        self.searched = 0  # lines searched under this budget
        self.cut = False  # the bound was reached: the search stopped early

    def spent(self) -> bool:
        """True once the bound is reached; else one more line is searched."""
        if self.cut:
            return True
        if self.searched % CHECK_EVERY == CHECK_EVERY - 1 and self.clock() > self.deadline:
            self.cut = True
            return True
        self.searched += 1
        return False


def matching(search: Callable[[str], Any], lines: Iterable[str],
             budget: Budget | None = None) -> Iterator[tuple[int, str]]:
    """``(i, line)`` of each line ``search`` finds something in, in order;
    it stops early (``budget.cut``) once the budget is spent."""
    for i, line in enumerate(lines):
        if budget is not None and budget.spent():
            return
        if search(line):
            yield i, line
