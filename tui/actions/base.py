from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding

if TYPE_CHECKING:  # pragma: no cover
    from tui.services.cockpit import Cockpit
    from tui.services.session import Session


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
