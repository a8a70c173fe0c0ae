"""Quitting with work in flight asks once: probes still running (their
answers would be lost) or a form with text typed into it. ``q`` again, ``y``
or Enter quits; ``n`` or Esc stays."""

from __future__ import annotations

from textual.app import App
from textual.binding import Binding
from textual.widgets import Input

from perftriage.core.model.state import SessionState
from perftriage.ui.screens.hypothesis_form import ConfirmScreen
from perftriage.ui.key_order_workaround import FormScreen


class QuitConfirmScreen(ConfirmScreen):
    BINDINGS = [Binding("q", "answer(True)", "Quit", id="quit_confirm.quit")]


def unfinished_work(app: App, state: SessionState) -> str | None:
    """What quitting now would lose, in words; None when nothing."""
    running = sum(1 for p in state.probes.values() if not p.finished)
    typed = any(field.value.strip() for screen in app.screen_stack
                if isinstance(screen, FormScreen) for field in screen.query(Input))
    lost = []
    if running:
        lost.append(f"{running} probe{'s' if running > 1 else ''} still running")
    if typed:
        lost.append("a form has text")
    return " and ".join(lost) if lost else None


def quit_question(reason: str) -> QuitConfirmScreen:
    return QuitConfirmScreen(f"{reason}. Quit anyway? (q or y quits, n or Esc stays)")
