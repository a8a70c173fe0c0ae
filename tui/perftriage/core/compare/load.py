"""A transcript streamed into a :class:`Recording` (never all its events in memory)."""

from __future__ import annotations

from pathlib import Path

from perftriage.core.compare.recording import Recording
from perftriage.core.store import stream, transcript


def load(path: Path | str, problems: list[stream.LineProblem] | None = None) -> Recording:
    """Raises :class:`~perftriage.core.store.transcript.TranscriptError` for a
    file that is not a transcript (or OSError); bad lines go to ``problems``."""
    path = Path(path)
    header = transcript.read_header(path)
    _, offset = stream.header_and_offset(path)
    rec = Recording(name=str(header.get("name") or path.stem))
    feed = rec.feed
    for _, event in stream.iter_events(path, offset, problems=problems):
        feed(event)
    return rec
