"""Reading a whole transcript beside the UI: at once when it is small, else
in a thread (a 1M-event transcript read on the UI's thread froze the
replay). The baseline's readings and a replay's recorded triage use it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path


def read_whole(path: Path, max_bytes: int, read: Callable[[], None],
               name: str) -> threading.Thread | None:
    """Run ``read`` now when ``path`` is at most ``max_bytes`` (or cannot be
    measured), else in a daemon thread, started and returned: ``read`` sets
    its result in one assignment, so the UI sees all of it or none."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    if size <= max_bytes:
        read()
        return None
    thread = threading.Thread(target=read, daemon=True, name=name)
    thread.start()
    return thread
