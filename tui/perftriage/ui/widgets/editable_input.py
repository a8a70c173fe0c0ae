"""A text field for forms: it never selects its text on focus (one stray
key would wipe the field) and ctrl+z undoes, a run of typed characters at a
time."""

from __future__ import annotations

import time

from textual.binding import Binding
from textual.widgets import Input

UNDO_DEPTH = 200
TYPING_RUN_S = 1.0  # characters typed closer together than this undo as one step


class EditableInput(Input):
    """An Input for forms: no select-all on focus, ctrl+z undoes."""

    BINDINGS = [Binding("ctrl+z", "undo", "Undo", show=False, id="input.undo")]

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("select_on_focus", False)
        self._undo: list[tuple[str, int]] = []
        self._restoring = True  # the initial value is not an edit
        self._last_typed = 0.0
        super().__init__(*args, **kwargs)
        self._restoring = False

    def watch_value(self, old: str, new: str) -> None:
        if self._restoring or old == new:
            return
        now = time.monotonic()
        typing = len(new) == len(old) + 1 and new.startswith(old)
        if not (typing and self._undo and now - self._last_typed < TYPING_RUN_S):
            self._undo.append((old, min(self.cursor_position, len(old))))
            del self._undo[:-UNDO_DEPTH]
        self._last_typed = now if typing else 0.0

    def action_undo(self) -> None:
        if not self._undo:
            return
        value, cursor = self._undo.pop()
        self._restoring = True
        try:
            self.value = value
        finally:
            self._restoring = False
        self.cursor_position = cursor
        self._last_typed = 0.0
