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
        """True (and a one-line notification) when the session is a replay:
        the key would touch a host (probe, server, log follow)."""
        if self.cockpit.replay:
            self.notify("replay: keys that touch a host (probes, servers, log follows) are off",  # type: ignore[attr-defined]
                        severity="warning")
            return True
        return False

    def refuse_annotation(self) -> bool:
        """Like :meth:`refuse_in_replay` for notes and hypotheses, which a
        player takes (into a derived session, see services/replay.py)."""
        if getattr(self.session, "accepts_annotations", False):
            return False
        return self.refuse_in_replay()

    def pane(self, cls: type[P]) -> P | None:
        """The main screen's pane of type ``cls`` (None before it is mounted)."""
        screen = self.main_screen  # type: ignore[attr-defined]
        if screen is None or not screen.is_mounted:
            return None
        return screen.query_one(cls)
