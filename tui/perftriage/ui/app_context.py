"""What panes and screens need from the app, as a typed protocol.

Widgets reach the app through ``self.app``, which Textual types as a plain
``App``; :func:`app_context` gives them the cockpit's own side of it
(implemented by :class:`perftriage.ui.app.PerftriageApp`) without importing the
app module, so the import graph stays one way: app → screens → widgets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:  # pragma: no cover
    from textual.app import App
    from textual.dom import DOMNode
    from textual.message import Message
    from textual.widget import Widget

    from perftriage.ui.refresh import Refresher
    from perftriage.services.cockpit import Cockpit
    from perftriage.services.investigation.session import Session
    from perftriage.ui.theming import Catalog
    from perftriage.ui.probe_target import ProbeTarget


@dataclass
class ViewPrefs:
    """How views are shown, per pane, while the app runs (not saved): the
    Logs pane's wrap toggle (``W``) survives tab switches and the screen
    being rebuilt, and each pane keeps its own choice."""

    wrap: dict[str, bool] = field(default_factory=dict)  # pane name -> long lines wrap


class ThemeChooser(Protocol):
    """The app's theme controller, as the theme palette uses it."""

    @property
    def catalog(self) -> Catalog: ...

    def choose(self, name: str) -> None: ...


class ProbeAsker(Protocol):
    """The app's probe launcher, as a view's own probe key uses it (``k`` in
    the Stacks and Profile views: the stacks form, as from the main screen)."""

    def ask(self, kind: str) -> None: ...


class AppContext(Protocol):
    @property
    def cockpit(self) -> Cockpit: ...

    @property
    def launcher(self) -> ProbeAsker: ...

    @property
    def session(self) -> Session: ...

    @property
    def refresher(self) -> Refresher: ...

    @property
    def probe_target(self) -> ProbeTarget: ...

    @property
    def themes(self) -> ThemeChooser: ...

    @property
    def view_prefs(self) -> ViewPrefs: ...

    def expect_screen(self) -> None:
        """Call right before posting a message that asks for a dialog: keys
        typed until it is on screen go to it, not to the pane."""


def app_context(node: DOMNode) -> AppContext:
    """The running PerftriageApp of ``node``, typed by what it offers."""
    return cast("AppContext", node.app)


def ask_for_screen(widget: Widget, message: Message) -> None:
    """Post ``message``, which asks the main screen for a dialog (a widget
    cannot push one): keys typed until it is on screen go to it, not to the
    widget's own bindings."""
    app_context(widget).expect_screen()
    widget.post_message(message)


# keys that add to the session (refused where the session takes no notes or
# hypotheses: watch, a saved session read whole) and keys that write a file
ANNOTATING = frozenset({
    "session.note", "hypothesis.add", "hypothesis.edit", "hypothesis.status_next",
    "hypothesis.evidence_for", "hypothesis.evidence_against", "hypothesis.evidence_pick",
    "hypothesis.move_up", "hypothesis.move_down", "hypothesis.delete", "hypothesis.undo",
    "hypothesis_detail.unlink", "roofline.open", "grow.load_pack",
})
WRITING = frozenset({"report.write"})


def off_in_mode(binding_id: str | None, mode) -> bool:
    """A key the session's mode (``SessionMode``) refuses: a key that touches
    a host (a probe, a server, a log follow, a capture) where no host runs, a
    note or hypothesis edit where none is taken, a report where nothing is
    written. Not offered in the footer or the keys help (pressed, it says why)."""
    if not binding_id or binding_id == "probe.output":  # reading a probe's output is fine
        return False
    if not mode.live and (binding_id.startswith(("probe.", "server.", "grow."))
                          or binding_id in ("logs.open", "profile.capture", "profile.stacks",
                                            "stacks.sample")):
        return True
    if not mode.annotations and binding_id in ANNOTATING:
        return True
    return not mode.writes and binding_id in WRITING


def refuse_in_replay(node: Widget | App, *, annotation: bool = False) -> bool:
    """True (and a one-line notice) when the session is a replay. Notes and
    hypotheses (``annotation``) are refused only where the replay cannot take
    them (a player takes them into a derived session: services/investigation/replay.py)."""
    mode = app_context(node).session.mode
    if mode.live or (annotation and mode.annotations):
        return False
    node.notify(mode.refusal, severity="warning")
    return True
