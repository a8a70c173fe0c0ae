"""Works around Textual issue #6605: keys in the order they were typed,
into the field they were typed for.

Textual hands a key to the focused widget's own queue; a key that widget
does not handle itself (Backspace, ctrl+u, Tab, Enter: bindings) bubbles
back to the App's queue and runs *after* the printable keys typed behind
it — ``x⌫flashinfer.cute`` became ``import xflashinfer.cut``. And keys that
arrive while a form is still being pushed reach a screen with nothing
focused and are lost, or land in whatever gets focus first (a host
dropdown).

:class:`FormScreen` fixes both for the forms: the App
(:class:`OrderedKeysApp`) gives it every key, it buffers them until its
first field is focused, then runs each one to completion — the focused
widget's handler, then the bindings along the focus chain — before the
next, all in the App's task.

Upstream: Textual issue #6605 (keys that bubble to the App overtake keys
typed after them); the fix is Textual PR #6631 (open when this was
written). Delete this module when the Textual version pyproject.toml
requires contains that fix: make the forms plain ``ModalScreen`` screens and the
App a plain ``App``, and keep tests/ui/test_form_keys.py and
tests/ui/test_tmux_typing.py passing (they type at full speed into real
forms).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, ClassVar, Generic, TypeVar

from textual import events
from textual.app import App, ReturnType, ScreenStackError
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, TextArea

T = TypeVar("T")

SCREEN_EXPECTED_S = 0.5  # a pane's dialog request is on screen well within this
SETTLE_TIMEOUT_S = 1.0


class FormScreen(ModalScreen[T], Generic[T]):
    """A modal form that takes every key in typed order (see the module).

    ``FIRST_FOCUS`` selects the field focused when the form opens."""

    FIRST_FOCUS: ClassVar[str] = "Input"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._pending: list[events.Key] = []
        self._ready = False
        self._delivering = False
        self._closed = False

    def on_mount(self) -> None:
        first = self.query(self.FIRST_FOCUS) if self.FIRST_FOCUS else None
        if first:
            first.first().focus()
        self.call_after_refresh(self._open)

    def _open(self) -> None:
        # the keys are run by the App's task, never this screen's: a key's
        # effects travel through this screen's queue (see _settle)
        self._ready = True
        self.app.post_message(FormReady(self))

    async def drain_when_ready(self) -> None:
        if self._ready and not self._delivering:
            await self._drain()

    def typed_ahead(self, keys: list[events.Key]) -> None:
        """Keys typed before this form was pushed: run first, in typed order,
        once it is open."""
        self._pending.extend(keys)

    async def take_key(self, event: events.Key) -> None:
        """A key for this form (from the App, in the order it arrived)."""
        if self._closed:  # a straggler for a form already gone: the App takes it
            _spill(self.app, [event])
            return
        self._pending.append(event)
        if self._ready and not self._delivering:
            await self._drain()

    async def _drain(self) -> None:
        self._delivering = True
        try:
            while self._pending and not self._closed:
                # keys typed before the form opened came by two paths: typed order
                self._pending.sort(key=lambda e: e.time)
                if not self._on_top():  # closed, or another screen above: not ours now
                    break
                event = self._pending.pop(0)
                try:
                    await self._deliver(event)
                    if not event.is_printable:
                        await self._settle()  # Enter posts Submitted: let the form act on it
                except ScreenStackError:  # the app is shutting down: no screen takes keys now
                    self._pending.clear()
                    return
            if self._pending and not self._on_top():
                # dismissed (the rest is the App's), or covered by a dialog it
                # opened (ctrl+q's question): the rest is for that one
                self._closed = self._gone()
                rest, self._pending = self._pending, []
                _spill(self.app, rest)
        finally:
            self._delivering = False

    def _gone(self) -> bool:
        try:
            return self not in self.app.screen_stack
        except Exception:  # noqa: BLE001 - the app is shutting down
            return True

    def _on_top(self) -> bool:
        try:
            stack = self.app.screen_stack
        except Exception:  # noqa: BLE001 - the app is shutting down
            return False
        return bool(stack) and stack[-1] is self

    async def _settle(self) -> None:
        """Wait until what the last key posted has reached this screen (a
        message that travels the same way, from the focused widget up)."""
        done = asyncio.get_running_loop().create_future()
        (self.app.focused or self).post_message(KeySettled(done))  # no screen: ScreenStackError
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SETTLE_TIMEOUT_S):
                await done

    def on_key_settled(self, message: KeySettled) -> None:
        message.stop()
        if not message.done.done():
            message.done.set_result(None)

    async def _deliver(self, event: events.Key) -> None:
        """One key, to completion (see :func:`run_key`); focus moving
        (Tab) is waited for first, so the key finds the field it was typed for."""
        app = self.app
        if await app._check_bindings(event.key, priority=True):
            return
        for _ in range(int(SETTLE_TIMEOUT_S / 0.01)):  # focus moving (Tab): wait for it to land
            if app.focused is not None or not self.FIRST_FOCUS:
                break
            await asyncio.sleep(0.01)
        await run_key(app, event, priority_checked=True)


async def run_key(app: App, event: events.Key, *, priority_checked: bool = False) -> None:
    """One key, to completion, in the caller's task: priority bindings, the
    focused widget, then the bindings of the focus chain (what bubbling to
    the App would do later), never overtaken by the next key. Once the
    screens are gone (the app quitting) the key has nowhere to go: dropped."""
    with contextlib.suppress(ScreenStackError):
        await _run_key(app, event, priority_checked=priority_checked)


async def _run_key(app: App, event: events.Key, *, priority_checked: bool) -> None:
    if not priority_checked and await app._check_bindings(event.key, priority=True):
        return
    target = app.focused
    if target is not None:
        # handled here, not by a later hop through the queues. Textual types
        # bubble a ClassVar, but Key events have a __dict__ and MessagePump
        # reads message.bubble per instance: this event only stops bubbling.
        event.bubble = False  # type: ignore[misc]
        await target._dispatch_message(event)
        if event._stop_propagation or event._no_default_action:
            return
    await app._check_bindings(event.key)


class KeySettled(Message, bubble=True):
    """Round trip of :meth:`FormScreen._settle`."""

    def __init__(self, done: asyncio.Future) -> None:
        super().__init__()
        self.done = done


class FormReady(Message, bubble=False):
    """A form is open and focused: the App runs the keys it buffered."""

    def __init__(self, screen: FormScreen) -> None:
        super().__init__()
        self.screen = screen


class SpilledKeys(Message, bubble=False):
    """Keys a closing form had not used, for the App to dispatch in order."""


def _spill(app: App, keys: list[events.Key]) -> None:
    if not isinstance(app, OrderedKeysApp):
        app.post_message(_copy(keys[0]))  # an App that does not order keys
        return
    app.spill(keys)


def _copy(event: events.Key) -> events.Key:
    """A fresh key (the original may be marked handled), typed at the same time."""
    key = events.Key(event.key, event.character)
    key.time = event.time
    return key


class OrderedKeysApp(App[ReturnType]):
    """An App that, while a :class:`FormScreen` is on top, gives it every
    key in the order it arrived — raw keys straight from the driver, and keys
    typed ahead (before the form opened) that come back from the screen
    below as unhandled. Keys a form did not use before it closed are
    dispatched next, ahead of anything typed after them."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._spilled_keys: list[events.Key] = []
        self._held_keys: list[events.Key] = []  # typed while a requested screen is coming
        self._expected: object | None = None  # the pending request's token

    def expect_screen(self) -> None:
        """A pane asked for a dialog by message (it cannot push screens: the
        main screen does, a moment later). Keys typed meanwhile are held for
        that screen instead of running the pane's own keys (``/`` then
        ``err`` must search for "err", not jump to the next error)."""
        token = self._expected = object()
        self.set_timer(SCREEN_EXPECTED_S, lambda: self._screen_not_coming(token))

    def _holding(self) -> bool:
        return self._expected is not None  # until the screen is pushed, or the timer gives up

    def _screen_not_coming(self, token: object) -> None:
        """The request was dropped (nothing to show): the held keys run as typed."""
        if self._expected is token:
            self._release_held(None)

    def _release_held(self, screen: object) -> None:
        self._expected = None
        held, self._held_keys = self._held_keys, []
        if not held:
            return
        if isinstance(screen, FormScreen):
            screen.typed_ahead(held)
        else:
            self.spill(held)  # to whatever is on top once focus has landed

    def push_screen(self, screen: Any, *args: Any, **kwargs: Any) -> Any:
        result = super().push_screen(screen, *args, **kwargs)
        if self._expected is not None:
            self._release_held(screen)
        return result

    def spill(self, keys: list[events.Key]) -> None:
        """Keys a closing form did not use: dispatched next, in order."""
        self._spilled_keys.extend(keys)
        self.post_message(SpilledKeys())

    def _form_on_top(self) -> FormScreen | None:
        try:
            stack = self.screen_stack
        except Exception:  # noqa: BLE001 - no mode/screen yet (starting up)
            return None
        return stack[-1] if stack and isinstance(stack[-1], FormScreen) else None

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded \
                and (split := self._escape_then_key(event)):
            for key in split:
                await self.on_event(key)
            return
        if isinstance(event, events.Key) and not event.is_forwarded:
            if self._spilled_keys or self._focus_is_stale():
                # earlier keys still to dispatch, or focus not back yet: after them
                self._spilled_keys.append(event)
                if len(self._spilled_keys) == 1:
                    self.post_message(SpilledKeys())
                return
            screen = self._form_on_top()
            if screen is not None:
                self.app_focus = True
                await screen.take_key(event)
                return
            if self._holding():  # a requested screen is on its way: the key is its
                self._held_keys.append(event)
                return
            if self._runs_here(event):
                await run_key(self, event)
                return
        await super().on_event(event)

    def _escape_then_key(self, event: events.Key) -> list[events.Key] | None:
        """Esc then a letter, read in one go (typed fast, or a busy app
        reading late), is what a terminal sends for alt+letter: Textual
        reports ``alt+s`` and the Esc is lost (``?``, Esc, ``s`` left the
        keys help open). Nothing here binds alt+letter, so outside text
        fields (where alt+letter may be meant as typed) it is Esc, then the
        letter."""
        if not event.key.startswith("alt+") or event.character is None \
                or len(event.character) != 1 or not event.character.isalnum():
            return None
        try:
            focused = self.focused
        except ScreenStackError:  # no screen (starting up, or quitting)
            return None
        if self._form_on_top() is not None or isinstance(focused, (Input, TextArea)):
            return None
        keys = [events.Key("escape", "\x1b"), events.Key(event.character, event.character)]
        for key in keys:
            key.time = event.time
        return keys

    def _runs_here(self, event: events.Key) -> bool:
        """Textual hands a key to the focused widget's queue; what that
        widget does not handle bubbles back to the App's queue — behind the
        keys typed after it, which meanwhile went to the widget. So a key
        that moves focus (``1``–``4``, ``tab``) or asks a pane for a dialog
        (``e``) was overtaken: ``2 d`` deleted a hypothesis, ``4 e`` lost the
        ``e``. Every key therefore runs to completion here, before the next
        is read — except while a text field has focus (it handles its own
        keys, and there a digit is text) and Esc on a maximized pane
        (Textual restores the pane itself)."""
        try:
            screen, focused = self.screen, self.focused
        except Exception:  # noqa: BLE001 - no screen yet (starting up) or any more
            return False
        if isinstance(focused, (Input, TextArea)):
            return False
        return not (event.key == "escape" and screen.maximized is not None)

    def _focus_is_stale(self) -> bool:
        """Focus still on a screen that was just closed (Textual restores
        the screen below's focus a moment later): a key now would go there."""
        try:
            focused = self.focused
            return focused is not None and focused.screen is not self.screen
        except ScreenStackError:  # no screen any more (quitting): nothing to wait for
            return False
        except Exception:  # noqa: BLE001 - the widget is already gone
            return True

    async def on_form_ready(self, message: FormReady) -> None:
        await message.screen.drain_when_ready()

    async def on_spilled_keys(self, message: SpilledKeys) -> None:
        for _ in range(int(SETTLE_TIMEOUT_S / 0.01)):
            if not self._focus_is_stale():
                break
            await asyncio.sleep(0.01)
        while self._spilled_keys:
            key = self._spilled_keys.pop(0)
            screen = self._form_on_top()
            if screen is not None:
                await screen.take_key(key)
            elif not self.screen_stack:  # quitting: no screen takes keys any more
                self._spilled_keys.clear()
            else:
                await super().on_event(key)

    async def _on_key(self, event: events.Key) -> None:
        screen = self._form_on_top()
        if screen is not None:
            event.prevent_default()  # not the App's own bindings: the form's
            await screen.take_key(_copy(event))
        elif self._holding():  # typed behind the key that asked for a screen
            event.prevent_default()
            self._held_keys.append(_copy(event))
