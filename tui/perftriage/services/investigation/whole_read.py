"""Reading a whole transcript beside the UI: at once when it is small, else
in a thread (a 1M-event transcript read on the UI's thread froze the
replay). The baseline's readings and a replay's recorded triage use it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

# read on the caller's thread up to this size (~0.3 s for 40 MiB on a 2-core box)
SYNC_READ_MAX_BYTES = 16 << 20


def read_whole(path: Path, read: Callable[[], None], name: str,
               max_bytes: int | None = None) -> threading.Thread | None:
    """Run ``read`` now when ``path`` is at most ``max_bytes`` (or cannot be
    measured), else in a daemon thread, started and returned: ``read`` sets
    its result in one assignment, so the UI sees all of it or none."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    if size <= (SYNC_READ_MAX_BYTES if max_bytes is None else max_bytes):
        read()
        return None
    thread = threading.Thread(target=read, daemon=True, name=name)
    thread.start()
    return thread
