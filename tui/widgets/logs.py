"""Logs pane: the followed log sources (minimal view; lines come from state)."""

from __future__ import annotations

from textual.widgets import Log

from tui.core.state import SessionState
from tui.widgets.pane import Pane


class LogsPane(Pane):
    section = "logs"

    def __init__(self, title: str, **kwargs) -> None:
        super().__init__(title, **kwargs)
        self._written: dict[str, int] = {}

    def compose(self):
        yield Log(id="logs-view", max_lines=10_000, auto_scroll=True)

    def render_state(self, state: SessionState) -> None:
        view = self.query_one("#logs-view", Log)
        if not state.logs:
            if not view.line_count:
                view.write_line("no log sources — open one with the log commands")
            return
        for sid, src in state.logs.items():
            done = self._written.get(sid, 0)
            new = src.total_lines - done
            if new <= 0:
                continue
            lines = list(src.lines)[-min(new, len(src.lines)) :]
            view.write_lines(lines)
            self._written[sid] = src.total_lines
