"""``b``: mark the before of a before/after. The form takes ``now`` (the
last 30 s, the default), a run (``run 1`` or ``#1``), a session-time range
(``1:10-1:40``, either end open) or ``clear``; the Gap, Engine and Profile
views then show the live state against it (services/baseline.py)."""

from __future__ import annotations

from textual.app import App

from perftriage.services.compare.baseline import NOW, Baseline, BaselineError
from perftriage.ui.app_context import refuse_in_replay
from perftriage.ui.screens.prompt import PromptScreen

CLEAR = "clear"


def ask_baseline(app: App, baseline: Baseline | None) -> None:
    if refuse_in_replay(app) or baseline is None:
        return
    marked = baseline.session.state.baseline
    runs = len(baseline.session.state.segments)

    def validate(text: str) -> str | None:
        if text.strip() == CLEAR:
            return None if marked is not None else "no baseline to clear"
        try:
            baseline.window_for(text)
        except BaselineError as exc:
            return str(exc)
        return None

    def done(text: str | None) -> None:
        if text is None:
            return
        if text.strip() == CLEAR:
            baseline.clear()
            app.notify("baseline cleared")
            return
        try:
            e = baseline.mark(text)
        except BaselineError as exc:
            app.notify(f"no baseline: {exc}", severity="error")
            return
        app.notify(f"baseline: {e.label} — the Gap (G), Engine and Profile (P) views "
                   "compare the last 30 s with it")

    now = f"{NOW} (the last 30 s)"
    run_help = f", run 1..{runs}" if runs > 1 else ""
    current = f"now: {marked.label}. " if marked is not None else ""
    app.push_screen(PromptScreen(
        "baseline", "baseline", value=NOW,
        placeholder=f"{NOW} | run N | FROM-TO | {CLEAR}",
        help=f"{current}{now}{run_help}, a session-time range such as 1:10-1:40, or {CLEAR}",
        validate=validate), done)
