"""An Nsight Compute CSV already on this machine (a colleague's, an earlier
run's) brought into the investigation as the result of an ``ncu`` probe, so
the Profile view joins its kernels and the triage reads it like one the
cockpit ran: ``perftriage kernels FILE.csv --session NAME`` and the
palette's ``kernels: import CSV``."""

from __future__ import annotations

from pathlib import Path

import msgspec

from perftriage.core.model import events as ev
from perftriage.core.probe_kinds.ncu_kind import summary_line
from perftriage.core.profile.ncu import NcuSummary, summarize_file


def import_ncu_csv(session, path: Path, *, gpu: str | None = None,
                   peak_gbs: float | None = None, host: str = "localhost") -> tuple[str, NcuSummary]:
    """(the new probe id, the summary); NcuInputError names what is wrong
    with the file (nothing is emitted then)."""
    summary = summarize_file(str(path), gpu=gpu, peak_gbs=peak_gbs)
    return record_ncu_result(session, path, summary, host), summary


def record_ncu_result(session, path: Path, summary: NcuSummary, host: str = "localhost") -> str:
    """The summary of a CSV read already (off the app's thread) as an ncu
    probe's result: queued, started and finished at once."""
    probe_id = session.new_id("p")
    session.emit(ev.ProbeQueued(probe_id=probe_id, host=host, kind="ncu",
                                args=["--import", str(path)],
                                command=f"(an ncu CSV imported from {path})"))
    session.emit(ev.ProbeStarted(probe_id=probe_id))
    session.emit(ev.ProbeFinished(
        probe_id=probe_id, status="ok", exit_status=0, duration_s=0.0,
        summary=f"imported: {summary_line(summary)}",
        detail={"exit_status": 0, "imported": str(path), "ncu": msgspec.to_builtins(summary)}))
    return probe_id
