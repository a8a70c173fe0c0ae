"""Remote or typed text made safe for the report's Markdown: prose that stays
prose, table cells, code spans. Shared by the report and its sections."""

from __future__ import annotations

import re
from typing import Any

# "<" only where it could open a tag or an autolink (a letter, "/", "!", "?" next):
# "p < 0.001" stays as it reads, pasted as plain text
_MARKUP = re.compile(r"([\\`\[\]>|]|<(?=[A-Za-z/!?]))")


def inline(text: Any) -> str:
    """Remote or typed text as Markdown prose that stays prose: no link,
    image, HTML tag or code span can be made from it (``[ ] < > ` \\`` and
    ``|`` escaped) and it stays on its line."""
    return _MARKUP.sub(r"\\\1", " ".join(str(text).splitlines())).strip()


def cell(text: Any) -> str:
    """Text safe inside a Markdown table cell."""
    return inline(text)


def code_cell(text: str) -> str:
    """``text`` as one code span inside a table cell. GFM splits a row at
    every ``|`` not escaped, also inside a code span, which would let a name
    such as ``run|<img …>`` end its cell and put raw HTML or a link in the
    row; GFM reads ``\\|`` in a cell as a pipe (whatever precedes it), so
    every pipe is escaped and the name is shown whole. ``< > [ ]`` are text
    inside a code span, and the span is longer than any backtick run."""
    return code(text).replace("|", "\\|")


def code(text: str) -> str:
    """``text`` as one code span, whatever backticks it holds: the fence is
    one backtick longer than its longest run of them."""
    text = " ".join(text.splitlines())
    ticks = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"
