"""The report of a transcript file, streamed: ``perftriage report`` on a
million-event session never holds its events (the renderer itself stays
pure, in :mod:`perftriage.core.report.markdown`)."""

from __future__ import annotations

import os
from pathlib import Path

from perftriage.core.compare.load import load
from perftriage.core.replay.state_at import state_at
from perftriage.core.report import markdown
from perftriage.core.replay.log_ledger import LogLedger
from perftriage.core.report.log_scan import session_start
from perftriage.core.store import stream, transcript
from perftriage.core.store.redact import Redactor


def render_file(path: Path | str, problems: list[stream.LineProblem] | None = None,
                redactor: Redactor | None = None, *, summary_only: bool = False,
                full_report: str = "below") -> str:
    """Raises :class:`~perftriage.core.store.transcript.TranscriptError` for a
    file that is not a transcript; bad lines go to ``problems``."""
    path = Path(path)
    header = transcript.read_header(path)
    problems = [] if problems is None else problems
    start = session_start(str(header.get("started_at", "")))
    scan = markdown.LogScan(start.year if start else None)
    ledger = LogLedger(scan.feed)  # each line of a followed file counted once
    state, _ = state_at(path, None, problems, log_events=ledger.event)
    # a file name need not be UTF-8 (its bytes arrive as lone surrogates): shown as \\xff
    source = os.fsencode(path.name).decode("utf-8", "backslashreplace")
    recording = load(path)  # a second pass: every sample, for the before/after and phases
    return markdown.render(state, header=header, problems=problems, source=source,
                           log_scan=scan, redactor=redactor, recording=recording,
                           summary_only=summary_only, full_report=full_report)
