"""When a server log line was logged: the timestamp it starts with
(SGLang ``[2026-11-28 09:16:31 TP0]``, vLLM ``INFO 11-28 09:23:12``, ISO
``2026-11-28T09:16:31``), naive, as the server wrote it."""

from __future__ import annotations

import re
from datetime import datetime

_TS = re.compile(r"(?:(\d{4})-)?(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})")


def line_time(line: str, year: int) -> datetime | None:
    """The timestamp a log line starts with (naive; ``year`` when it has none)."""
    m = _TS.search(line, 0, 80)
    if m is None:
        return None
    y, mo, d, h, mi, s = m.groups()
    try:
        return datetime(int(y) if y else year, int(mo), int(d), int(h), int(mi), int(s))
    except ValueError:
        return None
