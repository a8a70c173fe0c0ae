"""Keys in the order they were typed, into the field they were typed for.

Textual hands a key to the focused widget's own queue; a key that widget
does not handle itself (Backspace, ctrl+u, Tab, Enter: bindings) bubbles
back to the App's queue and runs *after* the printable keys typed behind
it — ``x⌫flashinfer.cute`` became ``import xflashinfer.cut``. And keys that
arrive while a form is still being pushed reach a screen with nothing
focused and are lost, or land in whatever gets focus first (a host
dropdown).

:class:`FormScreen` fixes both for the forms: the App gives it every key
(:func:`take_key`), it buffers them until its first field is focused, then
runs each one to completion — the focused widget's handler, then the
bindings along the focus chain — before the next, all in the App's task.
:class:`EditableInput` never selects its text on focus (one stray key would
wipe the field) and undoes with ctrl+z.
"""

from __future__ import annotations

import time
from typing import ClassVar, Generic, TypeVar

from textual import events
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Input

T = TypeVar("T")

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


class FormScreen(ModalScreen[T], Generic[T]):
    """A modal form that takes every key in typed order (see the module).

    ``FIRST_FOCUS`` selects the field focused when the form opens."""

    FIRST_FOCUS: ClassVar[str] = "Input"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._pending: list[events.Key] = []
        self._ready = False
        self._delivering = False

    def on_mount(self) -> None:
        first = self.query(self.FIRST_FOCUS) if self.FIRST_FOCUS else None
        if first:
            first.first().focus()
        self.call_after_refresh(self._open)

    async def _open(self) -> None:
        self._ready = True
        await self._drain()

    async def take_key(self, event: events.Key) -> None:
        """A key for this form (from the App, in the order it arrived)."""
        self._pending.append(event)
        if self._ready and not self._delivering:
            await self._drain()

    async def _drain(self) -> None:
        self._delivering = True
        try:
            while self._pending and self.is_attached:
                # keys typed before the form opened came by two paths: typed order
                self._pending.sort(key=lambda e: e.time)
                await self._deliver(self._pending.pop(0))
        finally:
            self._delivering = False

    async def _deliver(self, event: events.Key) -> None:
        """One key, to completion: priority bindings, the focused widget,
        then the bindings of the focus chain (what bubbling to the App
        would do later), never overtaken by the next key."""
        app = self.app
        if app.screen is not self:  # the form closed: the rest is the next screen's
            app.post_message(_copy(event))
            return
        if await app._check_bindings(event.key, priority=True):
            return
        target = app.focused
        if target is not None:
            event.bubble = False  # handled here, not by a later hop through the queues
            await target._dispatch_message(event)
            if event._stop_propagation or event._no_default_action:
                return
        await app._check_bindings(event.key)


def _copy(event: events.Key) -> events.Key:
    """A fresh key (the original may be marked handled), typed at the same time."""
    key = events.Key(event.key, event.character)
    key.time = event.time
    return key


class OrderedKeysApp:
    """App mixin: while a :class:`FormScreen` is on top, every key goes to
    it in the order it arrived — raw keys straight from the driver, and keys
    typed ahead (before the form opened) that come back from the screen
    below as unhandled."""

    def _form_on_top(self) -> FormScreen | None:
        try:
            stack = self.screen_stack  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - no mode/screen yet (starting up)
            return None
        return stack[-1] if stack and isinstance(stack[-1], FormScreen) else None

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            screen = self._form_on_top()
            if screen is not None:
                self.app_focus = True  # type: ignore[attr-defined]
                await screen.take_key(event)
                return
        await super().on_event(event)  # type: ignore[misc]

    async def _on_key(self, event: events.Key) -> None:
        screen = self._form_on_top()
        if screen is not None:
            event.prevent_default()  # not the App's own bindings: the form's
            await screen.take_key(_copy(event))
