"""Writing the Markdown report of a session next to its transcript (the
``M`` key); the same renderer as ``perftriage report``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from perftriage.core.report import markdown as report
from perftriage.core.store import paths, transcript
from perftriage.core.store.paths import default_sessions_dir
from perftriage.core.store.redact import Redactor
from perftriage.services.investigation.session import Session

ReportError = (OSError, transcript.TranscriptError)


def report_path(session: Session) -> Path:
    if session.path is not None:
        return report.default_output(session.path)
    if session.source_path is not None:  # a replay read from a file
        return report.default_output(session.source_path)
    return default_sessions_dir() / f"{session.state.name}.md"


async def write_report(session: Session, redactor: Redactor) -> Path:
    """Render and write the report (private file, secrets redacted); raises
    one of ``ReportError``."""
    out = report_path(session)
    path = session.path
    if path is not None and session.writer is not None:
        session.writer.sync()
        tr = await asyncio.to_thread(transcript.read, path)
        text = await asyncio.to_thread(report.render_transcript, tr, redactor)
    else:
        text = report.render(session.state, redactor=redactor)
    await asyncio.to_thread(_write, out, text)
    return out


def _write(path: Path, text: str) -> None:
    paths.make_private_dirs(path.parent)
    paths.write_private(path, text)
