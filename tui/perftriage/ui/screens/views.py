"""Going between the detail views (Profile ``P``, Stacks ``T``): Esc from a
view opened from another returns to where the user was, and a second Esc to
the main screen; a view's key pressed where that view is already open goes
back to it rather than stacking a second copy.

A view is a screen class with ``VIEW = True``; the screens below the first
view (the main screen, the replay player) are where a view's Esc ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar
from weakref import WeakSet

from textual.app import App
from textual.screen import Screen

V = TypeVar("V", bound=Screen)
# views the user came back to with Esc: their Esc goes to the main screen
_RETURNED: WeakSet[Screen] = WeakSet()


def is_view(screen: Screen) -> bool:
    return getattr(screen, "VIEW", False) is True


def open_view(app: App, cls: type[V], make: Callable[[], V]) -> V | None:
    """The view ``cls`` on top: already there, it stays; open further down
    (P, then T, then P), the views above it close — that view is returned;
    else a new one (``make``) is pushed on top of where the user is (None)."""
    found = next((s for s in reversed(app.screen_stack) if type(s) is cls), None)
    if found is None:
        app.push_screen(make())
        return None
    while app.screen is not found:
        app.pop_screen()
    return found


def close_view(screen: Screen) -> None:
    """Esc in a view: back to the view it was opened from (once), else to the
    main screen: every view on the stack closes."""
    app = screen.app
    stack = app.screen_stack
    below = stack[-2] if len(stack) >= 2 and stack[-1] is screen else None
    if below is not None and is_view(below) and screen not in _RETURNED:
        _RETURNED.add(below)
        screen.dismiss(None)
        return
    if below is None:  # not on top (a modal over it): only itself
        screen.dismiss(None)
        return
    while len(app.screen_stack) > 1 and is_view(app.screen):
        app.pop_screen()
