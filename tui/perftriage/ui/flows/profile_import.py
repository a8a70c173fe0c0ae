"""``profile: import FILE…`` (palette): trace files already on this machine
(from nsys, a colleague, an earlier run) brought into the investigation as a
capture, like ``perftriage trace FILE... --session NAME`` headless; and
``kernels: import CSV…``: an Nsight Compute CSV as an ncu result, like
``perftriage kernels FILE.csv --session NAME``."""

from __future__ import annotations

import glob
import shlex
from pathlib import Path

from textual.app import App

from perftriage.core.profile.model import TraceError
from perftriage.core.sanitize import visible
from perftriage.ui.app_context import app_context, refuse_in_replay
from perftriage.ui.screens.prompt import PromptScreen
from perftriage.core.refusals import refusal


def trace_paths(text: str) -> list[Path]:
    """The files a line names: shell words, ``~`` and globs expanded;
    ValueError says which word names no file."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"cannot read the line: {exc}") from None
    paths: list[Path] = []
    for word in words:
        expanded = sorted(glob.glob(str(Path(word).expanduser()))) or [word]
        for name in expanded:
            if not Path(name).is_file():
                raise ValueError(f"{name}: no such file")
            paths.append(Path(name))
    if not paths:
        raise ValueError("name one or more trace files (one per rank)")
    return paths


def _validate(text: str) -> str | None:
    return refusal(trace_paths, text)


def import_traces(app: App) -> None:
    """Ask for the files, copy them next to the transcript, summarise them
    and open the Profile view on the new capture."""
    if refuse_in_replay(app):
        return
    ctx = app_context(app)

    async def run(paths: list[Path]) -> None:
        try:
            cap = await ctx.cockpit.profiles.import_files(paths)
        except (TraceError, OSError) as exc:
            app.notify(visible(str(exc)), severity="error", timeout=8)
            return
        app.notify(f"imported {cap.capture_id}: {len(paths)} trace file(s)")

    def chosen(value: str | None) -> None:
        if value:
            app.run_worker(run(trace_paths(value)), group="profile-import", exit_on_error=False)
            app.call_after_refresh(app.run_action, "profile")  # the view shows it once read

    app.push_screen(PromptScreen(
        "profile: import", "profile-import", placeholder="/path/1764-TP-*.trace.json.gz",
        help="Kineto traces (one per rank) or an nsys cuda_gpu_kern_sum CSV; globs work",
        validate=_validate), chosen)


def import_ncu(app: App) -> None:
    """Ask for ncu CSVs, read them off the app's thread and record each as
    an ncu result (the Profile view joins it with the kernels)."""
    import asyncio

    from perftriage.core.profile.ncu import NcuInputError, summarize_file
    from perftriage.services.profile.ncu_import import record_ncu_result

    if refuse_in_replay(app):
        return
    ctx = app_context(app)

    async def run(paths: list[Path]) -> None:
        for path in paths:
            try:
                summary = await asyncio.to_thread(summarize_file, str(path))
            except (NcuInputError, OSError) as exc:
                app.notify(visible(str(exc)), severity="error", timeout=8)
                return
            probe_id = record_ncu_result(ctx.cockpit.session, path, summary)
            app.notify(visible(f"imported {path.name} as {probe_id}: {len(summary.kernels)} "
                               "kernels (the Profile view joins them)"))

    def chosen(value: str | None) -> None:
        if value:
            app.run_worker(run(trace_paths(value)), group="ncu-import", exit_on_error=False)

    app.push_screen(PromptScreen(
        "kernels: import CSV", "ncu-import", placeholder="/path/moe-step.csv",
        help="Nsight Compute --csv output (ncu --csv --metrics dram__bytes_read.sum,...); "
             "globs work", validate=_validate), chosen)
