from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, TypeVar

from textual.binding import Binding

if TYPE_CHECKING:  # pragma: no cover
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.session import Session

P = TypeVar("P")


class ActionsMixin:
    """Base of the feature mixins; gives type checkers the app attributes."""

    BINDINGS: ClassVar[list[Binding]] = []
    PROVIDERS: ClassVar[tuple] = ()

    cockpit: Cockpit
    session: Session

    def refuse_in_replay(self) -> bool:
        """True (and a notification) when the session is a read-only replay."""
        if self.cockpit.replay:
            self.notify("this is a replay: read-only", severity="warning")  # type: ignore[attr-defined]
            return True
        return False

    def pane(self, cls: type[P]) -> P | None:
        """The main screen's pane of type ``cls`` (None before it is mounted)."""
        screen = self.main_screen  # type: ignore[attr-defined]
        if screen is None or not screen.is_mounted:
            return None
        return screen.query_one(cls)
